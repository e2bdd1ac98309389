package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/lease"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// logBuffer collects an exporter's log lines for a test to read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	t   *testing.T
}

// holderValue is the value an instance of id writes.
func holderValue(id string) []byte {
	b, err := json.Marshal(lease.Holder{Instance: id, Host: "h", PID: 7, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		panic(err)
	}
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if testing.Verbose() {
		b.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return b.buf.Write(p)
}

// count returns how many lines hold every one of words.
func (b *logBuffer) count(words ...string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, line := range strings.Split(b.buf.String(), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			n++
		}
	}
	return n
}

// leaseEnv is a stream of two partitions with a 2 s lease_ttl on a real
// nats-server, and its connector, whose state bucket exists.
type leaseEnv struct {
	t    *testing.T
	c    *config.Connector
	js   jetstream.JetStream
	kv   jetstream.KeyValue
	logs *logBuffer
	reg  *prometheus.Registry
	m    *metrics.Metrics
}

func newLeaseEnv(t *testing.T, ns *exportertest.NATSServer, name string) *leaseEnv {
	t.Helper()
	ctx := context.Background()
	js := ns.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`
name = "%[1]s"
[nats]
url = %[2]q
[state]
bucket = "%[1]s"
[[streams]]
stream = "%[1]s"
ack_wait = "30s"
partitions = 2
lease_ttl = "2s"
priority_timeout = "5s"
[s3]
bucket = "lease-test"
endpoint = "http://127.0.0.1:1"
prefix = "raw"
access_key_id_env = "JETLAKE_TEST_ACCESS_KEY"
secret_access_key_env = "JETLAKE_TEST_SECRET_KEY"
[output]
format = "json_lines"
path_template = "{stream}/{subject}"
[rotation]
max_file_age = "1s"
`, name, ns.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	conns, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c := conns[0]
	if _, err := state.Open(ctx, js, c.State.Bucket, 1); err != nil {
		t.Fatal(err)
	}
	// Per-key TTLs allowed, as an instance leaves the bucket.
	if _, err := lease.Open(ctx, js, c.State.Bucket); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, c.State.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	return &leaseEnv{t: t, c: c, js: js, kv: kv, logs: &logBuffer{t: t}, reg: reg, m: metrics.New(reg)}
}

// put writes key as a hand or a forger would: ttl 0 writes it without a
// TTL.
func (e *leaseEnv) put(key string, value []byte, ttl time.Duration) {
	e.t.Helper()
	var opts []jetstream.KVCreateOpt
	if ttl > 0 {
		opts = append(opts, jetstream.KeyTTL(ttl))
	}
	if _, err := e.kv.Create(context.Background(), key, value, opts...); err != nil {
		e.t.Fatal(err)
	}
}

// run starts an instance of the connector, stopped when the test ends.
func (e *leaseEnv) run() *Exporter {
	e.t.Helper()
	ex, err := New(e.c, Options{Logger: slog.New(slog.NewTextHandler(e.logs, nil)), Store: &MemStore{}, Metrics: e.m})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ex.Run(ctx) }()
	e.t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			e.t.Errorf("run: %v", err)
		}
	})
	return ex
}

// renewals returns how many lease renewals the instances made.
func (e *leaseEnv) renewals() float64 {
	var m dto.Metric
	if err := e.m.LeaseRenewals.WithLabelValues(e.c.Name, e.c.Streams[0].Stream, "renewed").Write(&m); err != nil {
		e.t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// heldBy reports whether every partition's lease names one instance that
// is not any of others.
func (e *leaseEnv) heldBy(others ...string) bool {
	e.t.Helper()
	holders, err := lease.PartitionHolders(context.Background(), e.kv, e.c.Name, e.c.Streams[0])
	if err != nil || len(holders) != e.c.Streams[0].Partitions {
		return false
	}
	var one string
	for _, h := range holders {
		if one != "" && h.Instance != one {
			return false
		}
		one = h.Instance
	}
	for _, o := range others {
		if one == o {
			return false
		}
	}
	return true
}

// A lease key that a hand or a forger wrote, without a TTL or with a value
// jetlake never writes, holds its partition up for at most twice lease_ttl:
// a live instance takes it over with its revision, and says once what it
// found.
func TestALeaseThatIsNoLiveHoldersIsTakenOver(t *testing.T) {
	t.Parallel()
	ns := exportertest.NATS(t, exportertest.NATSOptions{})
	gone := "GoneGoneGoneGoneGone00"
	for i, tc := range []struct {
		name  string
		value []byte
		ttl   time.Duration
		found string // in the warning
	}{
		{"written without a TTL", holderValue(gone), 0, "not renewed"},
		{"with a TTL of a day", holderValue(gone), 24 * time.Hour, "not renewed"},
		{"with a value that is no holder", []byte("hello"), time.Hour, "not a holder"},
		{"naming no instance", []byte(`{"instance":"","pid":3,"started":"2026-01-02T03:04:05Z"}`), time.Hour, "not a holder"},
		{"naming an instance no key could name", []byte(`{"instance":"a.>","pid":3,"started":"2026-01-02T03:04:05Z"}`), 0, "not a holder"},
		{"under another name of the partition", holderValue(gone), 0, "names none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newLeaseEnv(t, ns, fmt.Sprintf("LEASE%d", i))
			key := statekey.Leases(e.c.Name, e.c.Streams[0].Stream, e.c.Streams[0].Consumer) + "1"
			if tc.found == "names none" {
				key = statekey.Leases(e.c.Name, e.c.Streams[0].Stream, e.c.Streams[0].Consumer) + "01"
			}
			e.put(key, tc.value, tc.ttl)
			ex := e.run()
			// Twice lease_ttl, a round and the set-up.
			exportertest.WaitFor(t, 15*time.Second, "the instance holding both partitions", func() bool {
				return ex.held.Load() == 2 && e.heldBy(gone)
			})
			// Rounds go on renewing; the entry was reported once.
			start := e.renewals()
			exportertest.WaitFor(t, 15*time.Second, "four more renewals", func() bool { return e.renewals() >= start+4 })
			if n := e.logs.count("level=WARN", key); n != 1 {
				t.Errorf("%d warnings about %s, want 1:\n%s", n, key, e.logs.buf.String())
			}
			if n := e.logs.count("level=WARN", key, tc.found); n != 1 {
				t.Errorf("the warning about %s does not say %q", key, tc.found)
			}
		})
	}
}

// Membership keys that a forger wrote, with ids that sort first, do not
// push a live instance's share to 0: one that is no member value counts
// at once as no member, one that nobody renews once twice lease_ttl
// passed. Each is reported once.
func TestForgedMembersDoNotStarveALiveInstance(t *testing.T) {
	t.Parallel()
	ns := exportertest.NATS(t, exportertest.NATSOptions{})
	e := newLeaseEnv(t, ns, "MEMBERS")
	prefix := statekey.Members(e.c.Name)
	forged := map[string][]byte{
		"0": holderValue("0"), // without a TTL, never renewed
		"1": []byte("hello"),
		"2": holderValue("Other"),
		"3": []byte(`{"instance":"3"}`),
	}
	for id, v := range forged {
		ttl := time.Duration(0)
		if id != "0" {
			ttl = time.Hour
		}
		e.put(prefix+id, v, ttl)
	}
	ex := e.run()
	exportertest.WaitFor(t, 15*time.Second, "the live instance holding both partitions", func() bool {
		return ex.held.Load() == 2 && e.heldBy("0", "1", "2", "3")
	})
	start := e.renewals()
	exportertest.WaitFor(t, 15*time.Second, "four more renewals", func() bool { return e.renewals() >= start+4 })
	for id := range forged {
		if n := e.logs.count("level=WARN", prefix+id); n != 1 {
			t.Errorf("%d warnings about %s, want 1", n, prefix+id)
		}
	}
	if t.Failed() {
		t.Log(e.logs.buf.String())
	}
}
