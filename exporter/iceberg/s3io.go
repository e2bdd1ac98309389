package iceberg

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
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

// init puts s3IO in the place of iceberg-go's s3:// file IO, which stays
// registered for s3a:// and does the work.
func init() {
	iceio.Unregister("s3")
	iceio.Register("s3", s3IO)
}

// s3IO opens the file IO of an s3:// location: iceberg-go's own, with an
// AWS configuration whose HTTP client trusts the authorities of
// S3CAFileProperty when the properties name a file. Region, endpoint and
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
	return iceio.LoadFS(ctx, props, alias.String())
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
