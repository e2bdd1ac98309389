package exportertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Default MinIO credentials and the region buckets are created in.
const (
	DefaultMinIOAccessKey = "jetlake"
	DefaultMinIOSecretKey = "jetlake-secret"
	MinIORegion           = "us-east-1"
)

// MinIOOptions configures StartMinIO. The zero value starts a server on free
// ports in a new temporary directory, with the default credentials.
type MinIOOptions struct {
	// Dir holds the data directory and the log. Empty means a new
	// temporary directory, removed by Stop; a given Dir is kept.
	Dir string
	// Port of the S3 API on 127.0.0.1. Zero means a free port.
	Port int
	// AccessKey and SecretKey are the root credentials; empty means
	// DefaultMinIOAccessKey and DefaultMinIOSecretKey.
	AccessKey, SecretKey string
	// StartTimeout bounds the wait for the server to report ready; zero
	// means DefaultStartTimeout.
	StartTimeout time.Duration
	// StopTimeout is how long Stop and Restart wait after SIGTERM before
	// they send SIGKILL; zero means DefaultStopTimeout.
	StopTimeout time.Duration
}

// MinIOServer is a running single-drive MinIO server listening on
// 127.0.0.1. Its methods are safe for concurrent use.
type MinIOServer struct {
	Endpoint    string // http://127.0.0.1:<Port>
	Port        int    // S3 API port
	ConsolePort int    // the console is disabled, but MinIO binds this port
	AccessKey   string
	SecretKey   string
	Dir         string // holds DataDir and LogFile
	DataDir     string // the drive MinIO serves
	LogFile     string // MinIO's standard output and error

	binary  string
	opts    MinIOOptions
	tempDir bool

	mu      sync.Mutex
	proc    *process
	stopped bool
}

// StartMinIO starts a MinIO server built from MinIOBinary and returns once
// GET /minio/health/ready answers 200. When opts.Port is zero and a chosen
// port is taken by someone else before the server binds it, the start is
// retried on new ports.
func StartMinIO(opts MinIOOptions) (*MinIOServer, error) {
	bin, err := MinIOBinary()
	if err != nil {
		return nil, err
	}
	if opts.AccessKey == "" {
		opts.AccessKey = DefaultMinIOAccessKey
	}
	if opts.SecretKey == "" {
		opts.SecretKey = DefaultMinIOSecretKey
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	s := &MinIOServer{binary: bin, opts: opts, Dir: opts.Dir, AccessKey: opts.AccessKey, SecretKey: opts.SecretKey}
	if s.Dir, s.tempDir, err = serverDir(opts.Dir, "minio"); err != nil {
		return nil, err
	}
	s.DataDir = filepath.Join(s.Dir, "data")
	s.LogFile = filepath.Join(s.Dir, "minio.log")
	if err := os.MkdirAll(s.DataDir, 0o755); err != nil {
		s.removeTempDir()
		return nil, fmt.Errorf("exportertest: start minio: %w", err)
	}

	for attempt := 1; ; attempt++ {
		if s.Port, err = choosePort(opts.Port); err == nil {
			if s.ConsolePort, err = FreePort(); err == nil {
				s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(s.Port)
				err = s.start()
			}
		}
		if err == nil || attempt == 3 || portFree(s.ConsolePort) && (opts.Port != 0 || portFree(s.Port)) {
			break
		}
	}
	if err != nil {
		s.removeTempDir()
		return nil, err
	}
	return s, nil
}

// start runs the server and waits for it to report ready. The caller holds
// mu or owns s exclusively.
func (s *MinIOServer) start() error {
	args := []string{
		"server",
		"--address", "127.0.0.1:" + strconv.Itoa(s.Port),
		"--console-address", "127.0.0.1:" + strconv.Itoa(s.ConsolePort),
		"--certs-dir", filepath.Join(s.Dir, "certs"), // not $HOME/.minio
		s.DataDir,
	}
	p, err := startProcess("minio", s.binary, args, s.env(), s.LogFile)
	if err != nil {
		return err
	}
	if err := p.waitReady(s.opts.StartTimeout, s.ready); err != nil {
		p.kill()
		return err
	}
	s.proc = p
	return nil
}

// env is this process's environment without MINIO_* variables, which
// would change the server's behaviour, plus the server's settings.
func (s *MinIOServer) env() []string {
	return Environ("MINIO_",
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
}

var healthClient = &http.Client{Timeout: time.Second}

// ready reports whether the server's readiness probe answers 200.
func (s *MinIOServer) ready() bool {
	resp, err := healthClient.Get(s.Endpoint + "/minio/health/ready")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Client returns a minio-go client for the server, with the root
// credentials.
func (s *MinIOServer) Client() (*minio.Client, error) {
	c, err := minio.New("127.0.0.1:"+strconv.Itoa(s.Port), &minio.Options{
		Creds:  credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Secure: false,
		Region: MinIORegion,
	})
	if err != nil {
		return nil, fmt.Errorf("exportertest: minio client: %w", err)
	}
	return c, nil
}

// CreateBucket creates the bucket name. A bucket that already exists is not
// an error, so callers may create their bucket again after a Restart.
func (s *MinIOServer) CreateBucket(ctx context.Context, name string) error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	err = c.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: MinIORegion})
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code == "BucketAlreadyOwnedByYou" {
		return nil
	}
	if err != nil {
		return fmt.Errorf("exportertest: create bucket %s: %w", name, err)
	}
	return nil
}

// Stop ends the server: SIGTERM, then SIGKILL after the stop timeout. It
// removes the temporary directory StartMinIO created (a given Dir is kept).
// Stop is idempotent; the server cannot be restarted afterwards.
func (s *MinIOServer) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	var err error
	if s.proc != nil {
		err = s.proc.stop(s.opts.StopTimeout)
	}
	if err == nil {
		err = s.removeTempDir()
	}
	return err
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it to
// exit. The data is kept, so Restart brings the server back with its objects.
// It returns ErrStopped after Stop.
func (s *MinIOServer) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	return s.proc.kill()
}

// Restart stops the server if it still runs (as Stop does, but keeping the
// data) and starts it again on the same ports with the same data. It returns
// once the server is ready again, or ErrStopped after Stop.
func (s *MinIOServer) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	if err := s.proc.stop(s.opts.StopTimeout); err != nil {
		return err
	}
	return s.start()
}

func (s *MinIOServer) removeTempDir() error {
	if !s.tempDir {
		return nil
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("exportertest: remove %s: %w", s.Dir, err)
	}
	return nil
}

// ClientEnv returns the process environment for a program that talks to
// this server through the standard AWS credential chain: the server's
// credentials, and no other AWS_* variable (a profile or session token of
// the user's would mix with them), then add.
func (s *MinIOServer) ClientEnv(add ...string) []string {
	return Environ("AWS_", append([]string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey}, add...)...)
}

// PID returns the process id of the running server, or 0 when it is not
// running.
func (s *MinIOServer) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.pid()
}
