package exportertest

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TB is the part of testing.TB the helpers of this file use. The package
// does not import testing, so that programs can use it too.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Cleanup(func())
}

// Short reports whether the running program is a test binary started with
// -short. Flags are parsed once tests run, so it is meant for tests, not
// for TestMain.
func Short() bool {
	f := flag.Lookup("test.short")
	return f != nil && f.Value.String() == "true"
}

// SkipShort skips t under -short, where no server may start. Every helper
// of this file that starts a server calls it first, so that a test starting
// its servers through them needs no check of its own.
func SkipShort(t TB) {
	t.Helper()
	if Short() {
		t.Skip("integration test: starts nats-server, MinIO or jetlake; skipped with -short")
	}
}

// WaitFor polls cond every 50 ms until it holds, and fails t once timeout
// has passed, saying what it waited for.
func WaitFor(t TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(fmt.Sprintf("timed out after %s waiting for %s", timeout, what))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// NATS starts a nats-server for t alone and stops it when t ends. It skips
// t under -short and fails t if the server does not start.
func NATS(t TB, opts NATSOptions) *NATSServer {
	t.Helper()
	SkipShort(t)
	s, err := StartNATS(opts)
	started(t, err, s.Stop)
	return s
}

// JetStream connects to s for t, closed when t ends, and returns a
// JetStream client on the connection.
func (s *NATSServer) JetStream(t TB) jetstream.JetStream {
	t.Helper()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// NATSCluster starts a JetStream cluster of n servers for t alone, as
// StartNATSCluster does, and stops it when t ends. It skips t under -short.
func NATSCluster(t TB, n int) []*NATSServer {
	t.Helper()
	SkipShort(t)
	servers, err := StartNATSCluster(n)
	started(t, err, func() error {
		for _, s := range servers {
			s.Stop()
		}
		return nil
	})
	return servers
}

// Postgres starts a PostgreSQL server for t alone and stops it when t
// ends. It skips t under -short and fails t if the server does not start.
func Postgres(t TB, opts PostgresOptions) *PostgresServer {
	t.Helper()
	SkipShort(t)
	s, err := StartPostgres(opts)
	started(t, err, s.Stop)
	return s
}

// MinIO starts a MinIO server for t alone and stops it when t ends. It
// skips t under -short and fails t if the server does not start.
func MinIO(t TB, opts MinIOOptions) *MinIOServer {
	t.Helper()
	SkipShort(t)
	s, err := StartMinIO(opts)
	started(t, err, s.Stop)
	return s
}

// started fails t when a server did not start (err), and otherwise has
// stop called when t ends; a nil stop leaves the server to its owner.
func started(t TB, err error, stop func() error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if stop != nil {
		t.Cleanup(func() { stop() })
	}
}

// Shared is the nats-server and the MinIO the tests of one package share,
// isolated by stream and bucket names. Each starts when a test first asks
// for it, so a package run with -short, or whose selected tests need no
// server, starts none. Call Stop from TestMain once m.Run returns. Tests
// that stop or restart a server start their own with NATS or MinIO.
type Shared struct {
	natsOnce, minioOnce sync.Once
	nats                *NATSServer
	minio               *MinIOServer
	natsErr, minioErr   error
}

// NATS returns the shared nats-server, starting it on first use. It skips t
// under -short and fails t if the server did not start.
func (s *Shared) NATS(t TB) *NATSServer {
	t.Helper()
	SkipShort(t)
	s.natsOnce.Do(func() { s.nats, s.natsErr = StartNATS(NATSOptions{}) })
	started(t, s.natsErr, nil)
	return s.nats
}

// MinIO returns the shared MinIO, starting it on first use. It skips t
// under -short and fails t if the server did not start.
func (s *Shared) MinIO(t TB) *MinIOServer {
	t.Helper()
	SkipShort(t)
	s.minioOnce.Do(func() { s.minio, s.minioErr = StartMinIO(MinIOOptions{}) })
	started(t, s.minioErr, nil)
	return s.minio
}

// Stop stops the servers that were started; none starts afterwards.
func (s *Shared) Stop() {
	s.natsOnce.Do(func() {})
	s.minioOnce.Do(func() {})
	if s.nats != nil {
		s.nats.Stop()
	}
	if s.minio != nil {
		s.minio.Stop()
	}
}

// Environ returns the environment for a child process: this process's
// environment without the variables whose names start with drop (none when
// drop is empty), then add. Later entries win, so add overrides what is
// kept.
func Environ(drop string, add ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if drop == "" || !strings.HasPrefix(kv, drop) {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}
