package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A backfill script reads run -until-idle's exit code: a run stopped by a
// signal before its work was done has not exported everything and must not
// say it succeeded. Here the Iceberg catalog is never reachable, so nothing
// can be committed, and SIGTERM ends the run.
func TestUntilIdleStoppedBeforeIdleExitsNonZero(t *testing.T) {
	ctx := context.Background()
	js := streamAndBucket(t, shared.NATS(t), shared.MinIO(t), "halfway", jetstream.StreamConfig{})
	for i := range 20 {
		if _, err := js.Publish(ctx, "halfway.a", []byte(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	// A loopback port nothing listens on: the catalog is unreachable.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	path := writeFile(t, "halfway.toml", fmt.Sprintf(`name = "halfway"
[nats]
url = %q
[[streams]]
stream = "HALFWAY"
[s3]
bucket = "halfway"
endpoint = %q
[output]
format = "parquet"
[iceberg]
catalog = "rest"
uri = "http://%s/catalog"
namespace = "lake"
table = "events"
`, shared.NATS(t).URL, shared.MinIO(t).Endpoint, dead))
	cmd := exec.Command(binary, "run", "-until-idle", "-config", path)
	cmd.Env = shared.MinIO(t).ClientEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("run -until-idle ended with the catalog unreachable: %v\n%s", err, stderr.String())
	case <-time.After(3 * time.Second):
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exitErr error
	select {
	case exitErr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not stop after SIGTERM\n%s", stderr.String())
	}
	if exitErr == nil || cmd.ProcessState.ExitCode() != exitFailure {
		t.Fatalf("run -until-idle stopped before idle: exit %v, want %d\n%s", exitErr, exitFailure, stderr.String())
	}
	if want := "stopped before halfway had exported everything"; !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, stderr.String())
	}
}

// A sqlite catalog whose folder does not exist can never open: run stops
// with the folder named and the fix, instead of retrying "iceberg catalog
// unavailable" for ever.
func TestASqliteCatalogInAMissingFolderStopsTheRun(t *testing.T) {
	ctx := context.Background()
	js := streamAndBucket(t, shared.NATS(t), shared.MinIO(t), "nofolder", jetstream.StreamConfig{})
	if _, err := js.Publish(ctx, "nofolder.a", []byte(`{"i":1}`)); err != nil {
		t.Fatal(err)
	}
	missing := t.TempDir() + "/no/such/dir"
	path := writeFile(t, "nofolder.toml", fmt.Sprintf(`name = "nofolder"
[nats]
url = %q
[[streams]]
stream = "NOFOLDER"
[s3]
bucket = "nofolder"
endpoint = %q
[output]
format = "parquet"
[iceberg]
uri = "sqlite://%s/catalog.db"
namespace = "lake"
table = "events"
`, shared.NATS(t).URL, shared.MinIO(t).Endpoint, missing))
	cmd := exec.Command(binary, "run", "-until-idle", "-config", path)
	cmd.Env = shared.MinIO(t).ClientEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("run kept retrying a catalog whose folder does not exist:\n%s", stderr.String())
	}
	want := "the folder " + missing + " does not exist"
	if cmd.ProcessState.ExitCode() != exitFailure || !strings.Contains(stderr.String(), want) {
		t.Fatalf("exit %d, want %d and %q:\n%s", cmd.ProcessState.ExitCode(), exitFailure, want, stderr.String())
	}
}
