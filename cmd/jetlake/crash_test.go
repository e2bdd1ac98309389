package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/fault"
	"github.com/jetlake/jetlake/lossmarker"
)

// crashEnv is a stream, a bucket and a connector file for one crash test.
type crashEnv struct {
	t     *testing.T
	name  string // stream, bucket and connector name
	file  string
	js    jetstream.JetStream
	mc    *minio.Client
	minio *exportertest.MinIOServer
	nats  *exportertest.NATSServer
}

// streamAndBucket connects to ns, creates the stream NAME on name.> with
// cfg's other settings and the bucket name in ms, and returns the
// connection's JetStream.
func streamAndBucket(t *testing.T, ns *exportertest.NATSServer, ms *exportertest.MinIOServer, name string, cfg jetstream.StreamConfig) jetstream.JetStream {
	t.Helper()
	ctx := context.Background()
	nc, err := nats.Connect(ns.URL, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	cfg.Name = strings.ToUpper(name)
	cfg.Subjects = []string{name + ".>"}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := ms.CreateBucket(ctx, name); err != nil {
		t.Fatal(err)
	}
	return js
}

func newCrashEnv(t *testing.T, name string, ns *exportertest.NATSServer, ms *exportertest.MinIOServer, streamCfg jetstream.StreamConfig) *crashEnv {
	t.Helper()
	js := streamAndBucket(t, ns, ms, name, streamCfg)
	mc, err := ms.Client()
	if err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, name+".toml", fmt.Sprintf(`name = %[1]q
shutdown_timeout = "10s"
[nats]
url = %[2]q
[[streams]]
stream = %[3]q
ack_wait = "30s"
[s3]
bucket = %[1]q
endpoint = %[4]q
prefix = "lake"
[rotation]
max_messages_per_file = 300
max_file_age = "2s"
`, name, ns.URL, strings.ToUpper(name), ms.Endpoint))
	return &crashEnv{t: t, name: name, file: file, js: js, mc: mc, minio: ms, nats: ns}
}

// publish publishes n messages over the given number of subjects.
func (c *crashEnv) publish(n, subjects int) {
	c.t.Helper()
	if err := c.send(n, subjects); err != nil {
		c.t.Fatal(err)
	}
}

// publishInBackground publishes as publish does while the test goes on; the
// channel receives the outcome. The error comes back to the test's
// goroutine, the only one that may end the test.
func (c *crashEnv) publishInBackground(n, subjects int) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.send(n, subjects) }()
	return done
}

func (c *crashEnv) send(n, subjects int) error {
	wait := func() error {
		select {
		case <-c.js.PublishAsyncComplete():
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("publish to %s: no acks within 10s", c.name)
		}
	}
	for i := range n {
		subj := fmt.Sprintf("%s.s%02d", c.name, i%subjects)
		if _, err := c.js.PublishAsync(subj, []byte(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", 100)))); err != nil {
			return fmt.Errorf("publish to %s: %w", subj, err)
		}
		if i%1000 == 999 {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return wait()
}

// start starts `jetlake run` with extra environment.
func (c *crashEnv) start(env ...string) (*exec.Cmd, *bytes.Buffer) {
	c.t.Helper()
	return c.startFile(c.file, env...)
}

// startFile starts `jetlake run` with another connector file.
func (c *crashEnv) startFile(file string, env ...string) (*exec.Cmd, *bytes.Buffer) {
	c.t.Helper()
	var stderr bytes.Buffer
	return c.startTo(file, &lockedWriter{w: &stderr}, env...), &stderr
}

// startTo starts `jetlake run` with a connector file, its standard error
// to w.
func (c *crashEnv) startTo(file string, w io.Writer, env ...string) *exec.Cmd {
	c.t.Helper()
	cmd := exec.Command(binary, "run", "-config", file)
	cmd.Env = c.minio.ClientEnv(env...)
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cmd.Process.Kill() })
	return cmd
}

// logBuffer is a log the test reads while a process writes it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// runUntilIdle runs `jetlake run -until-idle` and requires exit 0.
func (c *crashEnv) runUntilIdle() {
	c.t.Helper()
	cmd := exec.Command(binary, "run", "-until-idle", "-config", c.file)
	cmd.Env = c.minio.ClientEnv()
	out, err := runWithTimeout(cmd, 3*time.Minute)
	if os.Getenv("JETLAKE_TEST_SHOW_RUN") != "" {
		c.t.Logf("run -until-idle:\n%s", out)
	}
	if err != nil {
		c.t.Fatalf("run -until-idle: %v\n%s", err, out)
	}
}

// verify runs `jetlake verify -deep` and requires exit 0.
func (c *crashEnv) verify() string {
	c.t.Helper()
	cmd := exec.Command(binary, "verify", "-deep", "-quiet", "-config", c.file)
	cmd.Env = c.minio.ClientEnv()
	out, err := runWithTimeout(cmd, 2*time.Minute)
	if err != nil {
		c.t.Fatalf("verify -deep: %v\n%s", err, out)
	}
	return string(out)
}

func runWithTimeout(cmd *exec.Cmd, d time.Duration) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	timer := time.AfterFunc(d, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	return out.Bytes(), err
}

// exactlyOnce reads every data object independently of jetlake's own
// verify and checks that sequences 1..n are each in exactly one of them.
func (c *crashEnv) exactlyOnce(n uint64) {
	c.t.Helper()
	if marked := c.eachOnce(n); marked != 0 {
		c.t.Fatalf("%d sequences are named by loss markers, want none", marked)
	}
}

// eachOnce checks that sequences 1..n are each in exactly one data object
// or loss marker, reading the bucket itself, and returns how many the
// markers name.
func (c *crashEnv) eachOnce(n uint64) int {
	c.t.Helper()
	ctx := context.Background()
	seen := map[uint64]string{}
	marked := 0
	for obj := range c.mc.ListObjects(ctx, c.name, minio.ListObjectsOptions{Prefix: "lake/", Recursive: true}) {
		if obj.Err != nil {
			c.t.Fatal(obj.Err)
		}
		isMarker := strings.HasPrefix(obj.Key, "lake/_jetlake/lost/")
		if strings.HasPrefix(obj.Key, "lake/_jetlake/") && !isMarker {
			continue
		}
		r, err := c.mc.GetObject(ctx, c.name, obj.Key, minio.GetObjectOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		body, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			c.t.Fatal(err)
		}
		var seqs []uint64
		if isMarker {
			m, err := lossmarker.Parse(body)
			if err != nil {
				c.t.Fatalf("%s: %v", obj.Key, err)
			}
			for _, run := range m.Runs() {
				for q := run.First; q <= run.Last; q++ {
					seqs = append(seqs, q)
				}
			}
			marked += len(seqs)
		}
		sc := bufio.NewScanner(bytes.NewReader(body))
		for !isMarker && sc.Scan() {
			var rec struct {
				Sequence uint64 `json:"sequence"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				c.t.Fatalf("%s: %v", obj.Key, err)
			}
			seqs = append(seqs, rec.Sequence)
		}
		for _, q := range seqs {
			if prev, dup := seen[q]; dup {
				c.t.Fatalf("sequence %d is in %s and %s", q, prev, obj.Key)
			}
			seen[q] = obj.Key
		}
	}
	for q := uint64(1); q <= n; q++ {
		if _, ok := seen[q]; !ok {
			c.t.Fatalf("sequence %d is in no object or marker (%d of %d present)", q, len(seen), n)
		}
	}
	if uint64(len(seen)) != n {
		c.t.Fatalf("%d sequences in objects and markers, want %d", len(seen), n)
	}
	return marked
}

// intents returns how many intents of the connector the state bucket holds.
func (c *crashEnv) intents() int {
	c.t.Helper()
	return c.stateKeys("intent.>")
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// waitKilled waits for a process that is expected to kill itself.
func waitKilled(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("want a crash (SIGKILL), got %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the fault point was never reached\n%s", stderr.String())
	}
}

func TestCrashAtEveryCommitStepExportsExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"before-upload", "during-upload", "after-upload", "after-acks", "after-confirm", "during-recovery"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			name := "crash-" + point
			c := newCrashEnv(t, name, shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
			const n = 2000
			c.publish(n, 4)
			if point == "during-recovery" {
				// Leave intents behind, then crash while recovering them.
				cmd, stderr := c.start(fault.Env + "=after-upload:3")
				waitKilled(t, cmd, stderr)
				if c.intents() == 0 {
					t.Fatal("no intent was left to recover")
				}
			}
			hit := ":3" // let a few batches through first
			if point == "during-recovery" {
				hit = ":1"
			}
			cmd, stderr := c.start(fault.Env + "=" + point + hit)
			waitKilled(t, cmd, stderr)
			c.runUntilIdle()
			out := c.verify()
			if !strings.Contains(out, "OK: every sequence") {
				t.Fatalf("verify:\n%s", out)
			}
			c.exactlyOnce(n)
			if left := c.intents(); left != 0 {
				t.Fatalf("%d intents left after a clean run", left)
			}
		})
	}
}

// chaosSeedEnv names the variable that replays a chaos test: set it to the
// seed a failed run logged.
const chaosSeedEnv = "JETLAKE_CHAOS_SEED"

// chaosSeed returns the seed of t's random choices, $JETLAKE_CHAOS_SEED or
// one from the clock, and logs it so that a failure can be replayed.
func chaosSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(chaosSeedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s: %v", chaosSeedEnv, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, chaosSeedEnv, seed)
	return seed
}

func TestChaosKillsLoseAndDuplicateNothing(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "chaos", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	const n = 50000
	published := c.publishInBackground(n, 20)
	rng := rand.New(rand.NewPCG(chaosSeed(t), 7))
	kills := 0
	for kills < 6 {
		cmd, _ := c.start()
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		kills++
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	c.runUntilIdle()
	out := c.verify()
	if !strings.Contains(out, "OK: every sequence") {
		t.Fatalf("verify after %d kills:\n%s", kills, out)
	}
	c.exactlyOnce(n)
	t.Logf("%d kills; verify:\n%s", kills, out)
}
