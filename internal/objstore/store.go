// Package objstore is where jetlake's objects go: the ObjectStore
// interface the exporter writes through, the S3 store behind it, the
// metadata names every object carries, the errors a store returns, and the
// conditional-write probe.
package objstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/failure"
)

// ObjectStore is where the exporter writes objects.
type ObjectStore interface {
	// Put stores body under key durably before it returns nil. With
	// o.IfNoneMatch it stores nothing when the key exists and returns an
	// error wrapping ErrExists. Errors that retrying will not mend are
	// *failure.Permanent.
	Put(ctx context.Context, key string, body formats.Body, o PutOptions) error
	// Head returns the user metadata of the object at key, or an error
	// wrapping ErrNotFound.
	Head(ctx context.Context, key string) (map[string]string, error)
}

// PutOptions describe an object beyond its bytes.
type PutOptions struct {
	ContentType string
	Metadata    map[string]string // user metadata, without the x-amz-meta- prefix
	IfNoneMatch bool              // store only when no object has the key (If-None-Match: *)
}

// ObjectReader lists and reads objects, for verify and compaction.
type ObjectReader interface {
	// List calls fn for every object under prefix (a key prefix ending in
	// "/"), with its key and user metadata when the store returns it.
	List(ctx context.Context, prefix string, fn func(key string, md map[string]string) error) error
	// Get returns the object's body.
	Get(ctx context.Context, key string) ([]byte, error)
	Head(ctx context.Context, key string) (map[string]string, error)
}

// Errors of ObjectStore implementations.
var (
	ErrExists   = errors.New("object exists")
	ErrNotFound = errors.New("object not found")
)

// KeyError is a store's refusal of an object key, such as MinIO's
// XMinioInvalidObjectName for a segment longer than 255 bytes, or a key
// longer than S3's 1024 bytes: retrying the same key will not mend it, but
// it concerns that key alone, not the connector. The exporter sets the
// batch's messages aside as rejected.
type KeyError struct {
	Key  string
	Code string // the S3 error code, or "" when the client refused the key
	Err  error
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("the store refuses the object key %q: %v", e.Key, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// keyCodes are the S3 error codes that refuse an object's key: MinIO's
// (a segment over 255 bytes, "..", an empty segment, NUL), and AWS's.
var keyCodes = map[string]bool{
	"XMinioInvalidObjectName":   true,
	"XMinioInvalidResourceName": true,
	"InvalidObjectName":         true,
	"KeyTooLongError":           true,
}

// permanentCodes are the S3 error codes that stop a connector: the
// configuration or the account is wrong and waiting will not fix it. A
// %s in a hint stands for the action the request needed.
var permanentCodes = map[string]string{
	"AccessDenied":          "check the credentials' permissions: the request needs %s",
	"AllAccessDisabled":     "access to the bucket is disabled",
	"InvalidAccessKeyId":    "check the access key id (AWS_ACCESS_KEY_ID or access_key_id_env)",
	"SignatureDoesNotMatch": "check the secret access key (AWS_SECRET_ACCESS_KEY or secret_access_key_env)",
	"NoSuchBucket":          "create the bucket or fix s3.bucket",
	"InvalidBucketName":     "fix s3.bucket",
	"AccountProblem":        "the storage account needs attention",
	"NotImplemented":        "the store lacks a feature of the request; a store without x-amz-checksum-crc32c needs [s3] checksum = \"md5\"",
	"InvalidArgument":       "the store refused a header; check storage_class and sse, and set [s3] checksum = \"md5\" for a store without x-amz-checksum-crc32c",
}

// classify puts a minio error into the kind it is: a *failure.Permanent
// when retrying cannot help, a *KeyError when the store refuses key, the
// key of a PUT ("" for other requests), a *failure.Throttled when the store
// asks for fewer requests (SlowDown, 503) and a *failure.ServerFault for
// another failure on its side (5xx); action is the IAM action the request
// needed (s3:PutObject for a PUT), which the hint of a refusal names.
// Outside this package no code reads minio-go's errors.
func classify(err error, bucket, key, action string) error {
	if err == nil {
		return nil
	}
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		switch er.Code {
		case "PreconditionFailed":
			return fmt.Errorf("%w: %w", ErrExists, err)
		case "NoSuchKey":
			return fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		if keyCodes[er.Code] && key != "" {
			return &KeyError{Key: key, Code: er.Code, Err: err}
		}
		if hint, ok := permanentCodes[er.Code]; ok {
			if strings.Contains(hint, "%s") {
				hint = fmt.Sprintf(hint, action)
			}
			return &failure.Permanent{Code: er.Code, Err: fmt.Errorf("bucket %q: %s: %w (%s)", bucket, er.Code, err, hint)}
		}
		switch {
		case er.Code == "SlowDown" || er.StatusCode == http.StatusServiceUnavailable:
			return &failure.Throttled{Err: err}
		case er.StatusCode >= http.StatusInternalServerError:
			return &failure.ServerFault{Err: err}
		}
	}
	return err
}

// S3Store writes objects to an S3-compatible store with minio-go.
type S3Store struct {
	client       *minio.Client
	bucket       string
	sse          encrypt.ServerSide // nil: the bucket's default
	storageClass string
	md5          bool                      // Content-MD5 instead of x-amz-checksum-crc32c
	crc32c       func(formats.Body) string // bodyCRC32C; tests send a wrong one
}

// SmallUploadsPerSlot is how many small uploads the exporter has in
// flight at once per slot of upload_concurrency; the store keeps an idle
// connection for each.
const SmallUploadsPerSlot = 4

// idleConnsBeside is how many idle connections to the store are kept
// beyond one per uploader, for the requests of recovery, walks and table
// commits.
const idleConnsBeside = 8

// NewS3Store returns a store for the [s3] settings of a connector. It does no
// network I/O. Credentials come from the environment variables the file
// names, or from the standard chain: AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, MINIO_ROOT_USER /
// MINIO_ROOT_PASSWORD, the shared credentials file, then IAM.
func NewS3Store(c config.S3) (*S3Store, error) {
	host, secure := "s3.amazonaws.com", true
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("s3 endpoint %q: %w", c.Endpoint, err)
		}
		host, secure = u.Host, u.Scheme == "https"
	}
	creds, err := s3Credentials(c)
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupDNS
	if c.PathStyle {
		lookup = minio.BucketLookupPath
	}
	opts := &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Region:       c.Region,
		BucketLookup: lookup,
		// The exporter owns the retry loop, its backoff and InProgress
		// timing; a second loop inside the client would hide outages.
		MaxRetries: 1,
		// Needed for minio-go to pass the x-amz-checksum-crc32c that Put
		// sets; Put always sets one, so the client never adds a trailer.
		TrailingHeaders: c.Checksum != config.ChecksumMD5,
	}
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	// Keep a connection for every upload that may be in flight, and some
	// for the requests beside them; the default keeps 16 per host, and the
	// uploads past those would each open and close a connection.
	tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, SmallUploadsPerSlot*c.UploadConcurrency+idleConnsBeside)
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("s3 tls_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("s3 tls_ca_file %s: no PEM certificate in it", c.TLSCAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	opts.Transport = tr
	client, err := minio.New(host, opts)
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	st := &S3Store{client: client, bucket: c.Bucket, storageClass: c.StorageClass, md5: c.Checksum == config.ChecksumMD5, crc32c: bodyCRC32C}
	switch c.SSE {
	case config.SSES3:
		st.sse = encrypt.NewSSE()
	case config.SSEKMS:
		st.sse, err = encrypt.NewSSEKMS(c.SSEKMSKeyID, nil)
		if err != nil {
			return nil, fmt.Errorf("s3 sse: %w", err)
		}
	}
	return st, nil
}

func s3Credentials(c config.S3) (*credentials.Credentials, error) {
	if c.AccessKeyIDEnv != "" {
		id, secret := os.Getenv(c.AccessKeyIDEnv), os.Getenv(c.SecretAccessKeyEnv)
		if id == "" || secret == "" {
			return nil, fmt.Errorf("s3 credentials: environment variables %s and %s must both be set", c.AccessKeyIDEnv, c.SecretAccessKeyEnv)
		}
		return credentials.NewStaticV4(id, secret, os.Getenv("AWS_SESSION_TOKEN")), nil
	}
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.EnvMinio{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{},
	}), nil
}

// Put implements ObjectStore.
func (s *S3Store) Put(ctx context.Context, key string, body formats.Body, o PutOptions) error {
	// A checksum of the body makes the store check what it received:
	// x-amz-checksum-crc32c (hardware CRC, about 20 times cheaper than
	// MD5), or Content-MD5 for stores without the checksum headers. The
	// body is not signed besides (UNSIGNED-PAYLOAD, as over HTTPS): over
	// plain HTTP minio-go would otherwise hash it with SHA-256 chunk by
	// chunk, and the store verify every chunk, for no integrity the
	// checksum does not give; plain HTTP is refused outside loopback
	// unless allow_insecure_http is set.
	opts := minio.PutObjectOptions{
		ContentType:          o.ContentType,
		UserMetadata:         o.Metadata,
		DisableMultipart:     true,
		SendContentMd5:       s.md5,
		DisableContentSha256: true,
		StorageClass:         s.storageClass,
	}
	if !s.md5 {
		md := make(map[string]string, len(o.Metadata)+1)
		maps.Copy(md, o.Metadata)
		md[checksumHeader] = s.crc32c(body)
		opts.UserMetadata = md
	}
	if s.sse != nil {
		opts.ServerSideEncryption = s.sse
	}
	if o.IfNoneMatch {
		opts.SetMatchETagExcept("*")
	}
	// minio-go refuses some keys itself (longer than 1024 bytes, not
	// UTF-8) with a plain error, which would be retried for ever.
	if err := s3utils.CheckValidObjectName(key); err != nil {
		return &KeyError{Key: key, Err: err}
	}
	_, err := s.client.PutObject(ctx, s.bucket, key, body.NewReader(), body.Len(), opts)
	if err != nil {
		return classify(fmt.Errorf("put %s: %w", key, err), s.bucket, key, "s3:PutObject")
	}
	return nil
}

// checksumHeader carries the CRC32C of an upload's body.
const checksumHeader = "x-amz-checksum-crc32c"

// castagnoli is the CRC32C table; crc32 computes it with the CPU's CRC
// instructions where there are some.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// bodyCRC32C returns the base64 of the big-endian CRC32C of body, as the
// x-amz-checksum-crc32c header wants it.
func bodyCRC32C(body formats.Body) string {
	h := crc32.New(castagnoli)
	if _, err := body.WriteTo(h); err != nil {
		panic("exporter: hashing a body: " + err.Error()) // a hash never fails
	}
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// Head implements ObjectStore.
func (s *S3Store) Head(ctx context.Context, key string) (map[string]string, error) {
	info, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return nil, classify(fmt.Errorf("head %s: %w", key, err), s.bucket, "", "s3:GetObject")
	}
	return info.UserMetadata, nil
}

// CheckBucket verifies that the bucket exists and the credentials can reach
// it. A missing bucket is a *failure.Permanent.
func (s *S3Store) CheckBucket(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return classify(fmt.Errorf("check bucket %q: %w", s.bucket, err), s.bucket, "", "s3:ListBucket")
	}
	if !ok {
		return &failure.Permanent{Code: "NoSuchBucket", Err: fmt.Errorf("bucket %q does not exist: create it or fix s3.bucket", s.bucket)}
	}
	return nil
}

// List implements ObjectReader. MinIO returns user metadata with the
// listing; other stores leave md nil.
func (s *S3Store) List(ctx context.Context, prefix string, fn func(key string, md map[string]string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true, WithMetadata: true}) {
		if obj.Err != nil {
			return classify(fmt.Errorf("list %s: %w", prefix, obj.Err), s.bucket, "", "s3:ListBucket")
		}
		var md map[string]string
		if len(obj.UserMetadata) > 0 {
			md = make(map[string]string, len(obj.UserMetadata))
			for k, v := range obj.UserMetadata {
				md[strings.TrimPrefix(http.CanonicalHeaderKey(k), "X-Amz-Meta-")] = v
			}
		}
		if err := fn(obj.Key, md); err != nil {
			return err
		}
	}
	return nil
}

// ListModified calls fn for every object under prefix with the time it was
// last modified.
func (s *S3Store) ListModified(ctx context.Context, prefix string, fn func(key string, modified time.Time) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return classify(fmt.Errorf("list %s: %w", prefix, obj.Err), s.bucket, "", "s3:ListBucket")
		}
		if err := fn(obj.Key, obj.LastModified); err != nil {
			return err
		}
	}
	return nil
}

// Get implements ObjectReader.
func (s *S3Store) Get(ctx context.Context, key string) ([]byte, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, classify(fmt.Errorf("get %s: %w", key, err), s.bucket, "", "s3:GetObject")
	}
	defer obj.Close()
	body, err := io.ReadAll(obj)
	if err != nil {
		return nil, classify(fmt.Errorf("get %s: %w", key, err), s.bucket, "", "s3:GetObject")
	}
	return body, nil
}

// Delete removes the object at key. Only an Iceberg table's orphan sweep
// (of files whose metadata says this connector wrote them for the table)
// and commands that clean up after themselves (plan -cleanup) call it.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return classify(fmt.Errorf("delete %s: %w", key, err), s.bucket, "", "s3:DeleteObject")
	}
	return nil
}

// CollisionError reports an object that exists at the key of a new batch and
// was not written by it: the stream was re-created or its consumer reset, or
// two connectors share a bucket prefix. The exporter stops and acks nothing.
type CollisionError struct {
	Key           string
	Intent        string // intent id in the existing object's metadata
	Stream        string
	StreamCreated string
	Marker        bool   // the key is a loss marker's
	Consumer      string // the consumer of the existing marker
}

func (e *CollisionError) Error() string {
	if e.Marker {
		return fmt.Sprintf("loss marker %s already exists and records another consumer's loss (stream %q, consumer %q): "+
			"two connectors write to the same prefix; give this connector its own s3.prefix", e.Key, e.Stream, e.Consumer)
	}
	return fmt.Sprintf("object %s already exists and holds another batch (intent %q, stream %q created %s): "+
		"the stream was re-created or its consumer reset, or two connectors write to the same prefix; "+
		"give this connector its own s3.prefix", e.Key, e.Intent, e.Stream, e.StreamCreated)
}

// PutOnce is one attempt to store body at key, written once: with
// o.IfNoneMatch a conditional PUT; without it (a store that lacks
// conditional writes), a look before the write, which is not atomic, so
// two writers can still race. An object already at key is judged by
// mine, with its metadata: nil when it is this write's own (an earlier
// attempt landed), else the error mine returns (a collision).
func PutOnce(ctx context.Context, s ObjectStore, key string, body formats.Body, o PutOptions, mine func(md map[string]string) error) error {
	judge := func(md map[string]string) error {
		err := mine(md)
		var ce *CollisionError
		if errors.As(err, &ce) && ce.Key == "" {
			ce.Key = key
		}
		return err
	}
	if !o.IfNoneMatch {
		md, err := s.Head(ctx, key)
		switch {
		case err == nil:
			return judge(md)
		case !errors.Is(err, ErrNotFound):
			return err
		}
	}
	err := s.Put(ctx, key, body, o)
	if errors.Is(err, ErrExists) {
		md, herr := s.Head(ctx, key)
		if herr != nil {
			return herr
		}
		return judge(md)
	}
	return err
}

// WrittenBy judges an object found at the key of a batch written under the
// intent id: the batch's own from an earlier attempt (nil), or another's
// (a *CollisionError: stop, ack nothing).
func WrittenBy(id string) func(md map[string]string) error {
	return func(md map[string]string) error {
		if md[MetaIntent] == id {
			return nil
		}
		return &CollisionError{Intent: md[MetaIntent], Stream: md[MetaStream], StreamCreated: md[MetaStreamCreated]}
	}
}

// MarkerOf judges an object found at the key of a loss marker of stream
// and consumer: the same consumer's marker of the same range (an earlier
// attempt, or the same loss found again after a restart) is fine; anything
// else is a *CollisionError.
func MarkerOf(stream, consumer string) func(md map[string]string) error {
	return func(md map[string]string) error {
		if md[MetaStream] == stream && md[MetaConsumer] == consumer {
			return nil
		}
		return &CollisionError{Marker: true, Stream: md[MetaStream], Consumer: md[MetaConsumer]}
	}
}

// Opened is an object opened for reading in place, without holding its
// body: read in order through ReadAt (as a stream is) it costs one GET;
// reads elsewhere go through another GET, with a range each. Safe for
// concurrent use.
type Opened struct {
	mu     sync.Mutex
	ctx    context.Context
	s      *S3Store
	key    string
	size   int64
	stream *minio.Object // read in order, from 0
	at     int64         // where stream stands
	random *minio.Object // read at offsets
}

// Open opens the object at key for reading while ctx lasts.
func (s *S3Store) Open(ctx context.Context, key string) (*Opened, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, classify(fmt.Errorf("get %s: %w", key, err), s.bucket, "", "s3:GetObject")
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, classify(fmt.Errorf("get %s: %w", key, err), s.bucket, "", "s3:GetObject")
	}
	return &Opened{ctx: ctx, s: s, key: key, size: st.Size, stream: obj}, nil
}

// Size is the object's length in bytes.
func (o *Opened) Size() int64 { return o.size }

// ReadAt implements io.ReaderAt.
func (o *Opened) ReadAt(p []byte, off int64) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if off == o.at {
		n, err := io.ReadFull(o.stream, p)
		o.at += int64(n)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		return n, err
	}
	if o.random == nil {
		obj, err := o.s.client.GetObject(o.ctx, o.s.bucket, o.key, minio.GetObjectOptions{})
		if err != nil {
			return 0, classify(fmt.Errorf("get %s: %w", o.key, err), o.s.bucket, "", "s3:GetObject")
		}
		o.random = obj
	}
	n, err := o.random.ReadAt(p, off)
	if n == len(p) && errors.Is(err, io.EOF) {
		err = nil // all of p, up to the end
	}
	return n, err
}

// Close ends the reads.
func (o *Opened) Close() error {
	if o.random != nil {
		o.random.Close()
	}
	return o.stream.Close()
}
