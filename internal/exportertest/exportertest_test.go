package exportertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"
)

func TestFreePortCanBeListenedOn(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d from FreePort: %v", port, err)
	}
	l.Close()
}

func TestBinaryOverrideFromEnvironment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "nats-server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvNATSServer, bin)
	got, err := NATSServerBinary()
	if err != nil || got != bin {
		t.Fatalf("NATSServerBinary() = %q, %v; want %q", got, err, bin)
	}

	t.Setenv(EnvMinIO, filepath.Join(t.TempDir(), "missing"))
	if _, err := MinIOBinary(); err == nil {
		t.Fatal("MinIOBinary() with a missing override: no error")
	}
}

func TestNATSServerServesJetStreamAcrossRestartAndKill(t *testing.T) {
	SkipShort(t)
	t.Parallel()
	s, err := StartNATS(NATSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := s.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     "ORDERS",
		Subjects: []string{"orders.>"},
		Storage:  jetstream.FileStorage,
	}); err != nil {
		t.Fatal(err)
	}
	publish(ctx, t, js, "orders.new", "first")
	wantMessage(ctx, t, js, 1, "first")

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	js = s.JetStream(t)
	wantMessage(ctx, t, js, 1, "first")
	publish(ctx, t, js, "orders.new", "second")
	wantMessage(ctx, t, js, 2, "second")

	pid := s.PID()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	wantNotListening(t, s.Port)
	if got := s.PID(); got != 0 {
		t.Errorf("PID after Kill = %d, want 0", got)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := s.PID(); got == 0 || got == pid {
		t.Errorf("PID after Restart = %d, want a new process's (before: %d)", got, pid)
	}
	js = s.JetStream(t)
	wantMessage(ctx, t, js, 2, "second")

	wantStopLeavesNothing(t, s.Stop, s.proc, s.Port, s.Dir)
	if got := s.PID(); got != 0 {
		t.Errorf("PID after Stop = %d, want 0", got)
	}
	if err := s.Restart(); !errors.Is(err, ErrStopped) {
		t.Fatalf("Restart after Stop: %v, want ErrStopped", err)
	}
}

func TestNATSServerKeepsAGivenDir(t *testing.T) {
	SkipShort(t)
	t.Parallel()
	dir := t.TempDir()
	s, err := StartNATS(NATSOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nats-server.log")); err != nil {
		t.Fatalf("log in the given dir after Stop: %v", err)
	}
}

func TestStartNATSOnABusyPortNamesThePort(t *testing.T) {
	SkipShort(t)
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = StartNATS(NATSOptions{Port: port})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(strconv.Itoa(port))) {
		t.Fatalf("StartNATS on busy port %d: %v", port, err)
	}
}

func TestMinIOServerStoresObjectsAcrossRestartAndKill(t *testing.T) {
	SkipShort(t)
	t.Parallel()
	s, err := StartMinIO(MinIOOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.CreateBucket(ctx, "lake"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(ctx, "lake"); err != nil {
		t.Fatalf("second CreateBucket: %v", err)
	}
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":1}` + "\n")
	if _, err := c.PutObject(ctx, "lake", "raw/a.jsonl", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	wantObject(ctx, t, c, "raw/a.jsonl", body)

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	wantObject(ctx, t, c, "raw/a.jsonl", body)

	if s.PID() == 0 {
		t.Error("PID of a running server is 0")
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	wantNotListening(t, s.Port)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	wantObject(ctx, t, c, "raw/a.jsonl", body)

	wantStopLeavesNothing(t, s.Stop, s.proc, s.Port, s.Dir)
	if got := s.PID(); got != 0 {
		t.Errorf("PID after Stop = %d, want 0", got)
	}
}

func publish(ctx context.Context, t *testing.T, js jetstream.JetStream, subject, data string) {
	t.Helper()
	if _, err := js.Publish(ctx, subject, []byte(data)); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
}

// wantMessage reads stream sequence seq of ORDERS.
func wantMessage(ctx context.Context, t *testing.T, js jetstream.JetStream, seq uint64, data string) {
	t.Helper()
	stream, err := js.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetMsg(ctx, seq)
	if err != nil {
		t.Fatalf("message %d: %v", seq, err)
	}
	if string(msg.Data) != data {
		t.Fatalf("message %d = %q, want %q", seq, msg.Data, data)
	}
}

func wantObject(ctx context.Context, t *testing.T, c *minio.Client, key string, body []byte) {
	t.Helper()
	obj, err := c.GetObject(ctx, "lake", key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	got, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("get %s = %q, want %q", key, got, body)
	}
}

func wantNotListening(t *testing.T, port int) {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("port %d still accepts connections", port)
	}
}

// wantStopLeavesNothing stops a server and checks that its process exited
// and was reaped, its port is closed and its temporary directory is gone.
func wantStopLeavesNothing(t *testing.T, stop func() error, p *process, port int, dir string) {
	t.Helper()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !p.exited() || p.cmd.ProcessState == nil {
		t.Fatal("process still running after Stop")
	}
	wantNotListening(t, port)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary dir %s after Stop: %v", dir, err)
	}
	if err := stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestPostgresStartsAndStops(t *testing.T) {
	s := Postgres(t, PostgresOptions{})
	if err := exec1(s.URL, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("the server's directory is still there: %v", err)
	}
}

// A frozen link holds bytes without closing anything; a thawed one
// delivers them.
func TestLinkHoldsBytesWhileFrozen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	l := NewLink(t, ln.Addr().String())
	c, err := net.Dial("tcp", l.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo := func(msg string, wait time.Duration) (string, error) {
		if _, err := c.Write([]byte(msg)); err != nil {
			return "", err
		}
		c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, len(msg))
		_, err := io.ReadFull(c, buf)
		return string(buf), err
	}
	if got, err := echo("one", 5*time.Second); err != nil || got != "one" {
		t.Fatalf("before freezing: %q, %v", got, err)
	}
	l.Freeze()
	if got, err := echo("two", 300*time.Millisecond); err == nil {
		t.Fatalf("a frozen link passed %q", got)
	}
	l.Thaw()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 3)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "two" {
		t.Fatalf("after thawing: %q, %v", buf, err)
	}
}
