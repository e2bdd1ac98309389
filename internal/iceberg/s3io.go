package iceberg

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// S3CAFileProperty is the file IO property that names the PEM file of the
// certificate authorities an S3 endpoint's certificate is checked against
// ([s3] tls_ca_file). iceberg-go's S3 file IO has no property for a CA: it
// takes an AWS configuration from the context instead, which the s3://
// file IO registered here builds from this property.
const S3CAFileProperty = "jetlake.s3.tls-ca-file"

// tableLocationProperty is the file IO property that holds the location of
// the table the file IO serves, set by openCatalog: the file IO removes
// nothing outside it. The name ends in a random suffix drawn when the
// process starts, so that only jetlake can set it: a REST catalog lets a
// table's own properties override the catalog's file IO properties, and a
// table's properties are input read back, like its manifests.
var tableLocationProperty = "jetlake.table-location." + rand.Text()

// init puts s3IO in the place of iceberg-go's s3:// file IO, which stays
// registered for s3a:// and does the work.
func init() {
	iceio.Unregister("s3")
	iceio.Register("s3", s3IO)
}

// s3IO opens the file IO of an s3:// location: iceberg-go's own, with an
// AWS configuration whose HTTP client trusts the authorities of
// S3CAFileProperty when the properties name a file, fenced to the table
// location of tableLocationProperty (see fencedIO). Region, endpoint and
// credentials still come from the properties.
func s3IO(ctx context.Context, loc *url.URL, props map[string]string) (iceio.IO, error) {
	if file := props[S3CAFileProperty]; file != "" {
		cfg, err := s3CAConfigs.get(ctx, file)
		if err != nil {
			return nil, err
		}
		ctx = utils.WithAwsConfig(ctx, cfg)
	}
	alias := *loc
	alias.Scheme = "s3a"
	fs, err := iceio.LoadFS(ctx, props, alias.String())
	if err != nil {
		return nil, err
	}
	b, ok := fs.(blobIO)
	if !ok {
		return nil, fmt.Errorf("iceberg-go's S3 file IO %T lacks a method jetlake uses", fs)
	}
	return &fencedIO{blobIO: b, location: strings.TrimSuffix(props[tableLocationProperty], "/")}, nil
}

// blobIO is what fencedIO passes on from iceberg-go's S3 file IO. No method
// that removes, renames or replaces objects may be added without fencedIO
// overriding it: iceberg-go's RemoveAll, Rename and RenameNoReplace (which
// only the hadoop catalog uses) are left out on purpose.
type blobIO interface {
	iceio.ReadFileIO
	iceio.WriteFileIO
	iceio.StatIO
	iceio.ListableIO
	iceio.BulkRemovableIO
}

// fencedIO is the file IO of one table: it reads and writes as
// iceberg-go's does, and removes only files inside the table's location,
// "<location>/" (see under). iceberg-go removes what the table's metadata
// names: the manifest lists, manifests and data files of expired snapshots
// (through DeleteFiles, then Remove for what that left), old metadata
// files after a commit, manifest lists a retried commit orphaned. That
// metadata is read back from the store and the catalog, not truth: a
// forged or foreign manifest may name any object the credentials reach,
// such as s3://bucket/hr/salaries.parquet or another table's files.
type fencedIO struct {
	blobIO
	// location is the table's, without a trailing "/"; empty when the
	// file IO was opened without one (not by jetlake's catalog): then
	// nothing is removed.
	location string
}

// OutsideTableError is a removal the file IO of a table refused: the file
// is not inside the table's location. The file is left in place.
type OutsideTableError struct {
	Path     string // the file asked to be removed
	Location string // the table's location; empty when the file IO knows none
}

// Error names the file and the table's location.
func (e *OutsideTableError) Error() string {
	if e.Location == "" {
		return fmt.Sprintf("refused to remove %s: the file IO knows no table location to remove files in", e.Path)
	}
	return fmt.Sprintf("refused to remove %s: it is outside the table's location %s/", e.Path, e.Location)
}

// check returns an *OutsideTableError unless name is a file inside the
// table's location.
func (f *fencedIO) check(name string) error {
	if f.location == "" || !under(f.location+"/", name) {
		return &OutsideTableError{Path: name, Location: f.location}
	}
	return nil
}

// Remove removes name if it is inside the table's location, and returns an
// *OutsideTableError otherwise.
func (f *fencedIO) Remove(name string) error {
	if err := f.check(name); err != nil {
		return err
	}
	return f.blobIO.Remove(name)
}

// DeleteFiles deletes the paths inside the table's location, and returns
// an *OutsideTableError, joined with the other errors, for each of the
// others.
func (f *fencedIO) DeleteFiles(ctx context.Context, paths []string) ([]string, error) {
	inside := make([]string, 0, len(paths))
	var refused []error
	for _, p := range paths {
		if err := f.check(p); err != nil {
			refused = append(refused, err)
			continue
		}
		inside = append(inside, p)
	}
	deleted, err := f.blobIO.DeleteFiles(ctx, inside)
	return deleted, errors.Join(append(refused, err)...)
}

// Close closes the bucket of the file IO, as iceberg-go's REST catalog
// does with a file IO whose vended credentials it replaced.
func (f *fencedIO) Close() error {
	if c, ok := f.blobIO.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// caConfigs holds one AWS configuration for each CA file, so that the file
// IOs opened for one table (one for every commit, scan and compaction)
// share one HTTP client and its connections.
type caConfigs struct {
	mu   sync.Mutex
	cfgs map[string]*aws.Config
}

var s3CAConfigs = &caConfigs{cfgs: map[string]*aws.Config{}}

// get returns the AWS configuration that trusts the authorities of file;
// it fails when the file can not be read or holds no PEM certificate.
func (c *caConfigs) get(ctx context.Context, file string) (*aws.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg, ok := c.cfgs[file]; ok {
		return cfg, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("s3 tls_ca_file: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("s3 tls_ca_file %s: no PEM certificate in it", file)
	}
	// The tuning iceberg-go gives its own S3 client: many parallel
	// manifest and data file requests to one host.
	client := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost, t.MaxConnsPerHost = 256, 256, 2048
		t.IdleConnTimeout = 90 * time.Second
	})
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithHTTPClient(client), awsconfig.WithCustomCABundle(bytes.NewReader(pem)))
	if err != nil {
		return nil, fmt.Errorf("s3 tls_ca_file %s: %w", file, err)
	}
	c.cfgs[file] = &cfg
	return &cfg, nil
}
