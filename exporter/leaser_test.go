package exporter

import (
	"bytes"
	"context"
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
	"github.com/jetlake/jetlake/exporter/exportertest"
	"github.com/jetlake/jetlake/exporter/lease"
	"github.com/jetlake/jetlake/exporter/statekey"
)

// Shares differ by at most one, add up to the partitions, and go to the
// first instances in id order.
func TestShareSplitsPartitionsWithinOne(t *testing.T) {
	for _, tc := range []struct{ n, instances int }{{8, 1}, {8, 3}, {8, 4}, {8, 5}, {2, 3}, {1024, 7}} {
		var ids []string
		for i := range tc.instances {
			ids = append(ids, fmt.Sprintf("i%02d", i))
		}
		total, lo, hi := 0, tc.n, 0
		for _, id := range ids {
			s := Share(tc.n, ids, id)
			total += s
			lo, hi = min(lo, s), max(hi, s)
		}
		if total != tc.n || hi-lo > 1 {
			t.Errorf("%d partitions on %d instances: total %d, shares %d-%d", tc.n, tc.instances, total, lo, hi)
		}
		if Share(tc.n, ids, ids[0]) != hi {
			t.Errorf("%d partitions on %d instances: the first instance gets %d, not the larger share %d", tc.n, tc.instances, Share(tc.n, ids, ids[0]), hi)
		}
	}
}

// holderValue is the value jetlake writes for instance id.
func holderValue(id string) []byte {
	return leaseValue(lease.Holder{Instance: id, Host: "h", PID: 7, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
}

// Membership entries that are not values jetlake writes, or that nobody
// renewed for twice the TTL, count as no instance: they neither take a
// share nor push a live instance's share to 0, and each is reported.
func TestForgedAndStaleMembersTakeNoShare(t *testing.T) {
	const ttl = 10 * time.Second
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	const prefix = "member.Yw."
	live := func(id string) lease.Entry {
		return lease.Entry{Key: prefix + id, Value: holderValue(id), Revision: 9, Created: now.Add(-ttl / 3)}
	}
	forged := []lease.Entry{
		{Key: prefix + "0", Value: holderValue("0"), Revision: 1, Created: now.Add(-2*ttl - time.Second)}, // no TTL, left behind
		{Key: prefix + "00", Value: []byte("hello"), Revision: 2, Created: now},
		{Key: prefix + "01", Value: holderValue("ZZZ"), Revision: 3, Created: now},                  // names another
		{Key: prefix + "02", Value: []byte(`{"instance":""}`), Revision: 4, Created: now},           // names none
		{Key: prefix + "03", Value: []byte(`{"instance":"03","pid":0}`), Revision: 5, Created: now}, // no process
		{Key: prefix + "04", Value: []byte(`null`), Revision: 6, Created: now},                      // nothing
		{Key: prefix + "a b", Value: holderValue("a b"), Revision: 7, Created: now},                 // no id
		{Key: prefix + "05", Value: []byte(`{"instance":"05","pid":1,"started":"` + strings.Repeat("x", 5000) + `"`), Revision: 8, Created: now},
	}
	for _, tc := range []struct {
		name       string
		partitions int
		live       []string
		self       string // also an instance, not among the entries: its own write failed
	}{
		{"one live instance", 2, []string{"A"}, ""},
		{"as many partitions as instances", 3, []string{"A", "B", "C"}, ""},
		{"more partitions than instances", 5, []string{"A", "B"}, ""},
		{"self not listed", 2, []string{"A"}, "B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries := append([]lease.Entry(nil), forged...)
			for _, id := range tc.live {
				entries = append(entries, live(id))
			}
			selves := tc.live
			if tc.self != "" {
				selves = append(selves, tc.self)
			}
			total := 0
			for _, self := range selves {
				ids, ignored := liveMembers(entries, prefix, self, now, ttl)
				want := len(tc.live)
				if self == tc.self {
					want++ // its own write failed, but it counts itself
				}
				if len(ids) != want {
					t.Errorf("%s counts the members %v, want %d", self, ids, want)
				}
				if len(ignored) != len(forged) {
					t.Errorf("%s ignored %d entries, want %d: %+v", self, len(ignored), len(forged), ignored)
				}
				share := Share(tc.partitions, ids, self)
				if share < 1 {
					t.Errorf("%s: share %d of %d partitions among %v", self, share, tc.partitions, ids)
				}
				total += share
			}
			if tc.self == "" && total != tc.partitions {
				t.Errorf("the shares add up to %d, want %d", total, tc.partitions)
			}
		})
	}
}

// Values jetlake writes are holders; anything else is not.
func TestParseHolderRefusesWhatJetlakeNeverWrites(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{string(holderValue("Fb3xUqh0TLKQsU8IVJ5Wq7")), true},
		{string(leaseValue(lease.NewHolder("Fb3xUqh0TLKQsU8IVJ5Wq7"))), true},
		{`{"instance":"Fb3xUqh0TLKQsU8IVJ5Wq7","host":"","pid":1,"started":"2026-01-02T03:04:05Z"}`, true},
		{``, false},
		{`hello`, false},
		{`null`, false},
		{`{}`, false},
		{`"Fb3xUqh0TLKQsU8IVJ5Wq7"`, false},
		{`{"instance":"","pid":1,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"a.b","pid":1,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"a>","pid":1,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"` + strings.Repeat("a", 65) + `","pid":1,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"x","pid":0,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"x","pid":-4,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"x","pid":1}`, false},
		{`{"instance":"x","pid":1,"started":"2026-01-02T03:04:05Z","host":"` + strings.Repeat("h", 5000) + `"}`, false},
	} {
		_, err := lease.ParseHolder([]byte(tc.value))
		if (err == nil) != tc.ok {
			t.Errorf("lease.ParseHolder(%.60q): %v, want ok %v", tc.value, err, tc.ok)
		}
	}
}

// logBuffer collects an exporter's log lines for a test to read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	t   *testing.T
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
	m    *Metrics
}

func newLeaseEnv(t *testing.T, ns *exportertest.NATSServer, name string) *leaseEnv {
	t.Helper()
	ctx := context.Background()
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JETLAKE_TEST_ACCESS_KEY", "k")
	t.Setenv("JETLAKE_TEST_SECRET_KEY", "s")
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
	if _, err := openIntents(ctx, js, c.State.Bucket, 1); err != nil {
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
	return &leaseEnv{t: t, c: c, js: js, kv: kv, logs: &logBuffer{t: t}, reg: reg, m: NewMetrics(reg)}
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
	if err := e.m.leaseRenewals.WithLabelValues(e.c.Name, e.c.Streams[0].Stream, "renewed").Write(&m); err != nil {
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
