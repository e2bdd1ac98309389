package exporter_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
)

// countingHandler counts the log records whose message is msg, and passes
// every record on.
type countingHandler struct {
	slog.Handler
	msg string
	n   *atomic.Int64
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

func (h countingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return countingHandler{h.Handler.WithAttrs(attrs), h.msg, h.n}
}

func (h countingHandler) WithGroup(name string) slog.Handler {
	return countingHandler{h.Handler.WithGroup(name), h.msg, h.n}
}

// pinnedFor rewrites the env's connector file with failover = "pinned" and
// the given priority timeout, and loads it.
func (e *env) pinnedFor(timeout string) *config.Connector {
	e.t.Helper()
	body, err := os.ReadFile(e.file)
	if err != nil {
		e.t.Fatal(err)
	}
	s := strings.Replace(string(body), "ack_wait =", fmt.Sprintf("failover = \"pinned\"\npriority_timeout = %q\nack_wait =", timeout), 1)
	if err := os.WriteFile(e.file, []byte(s), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.connector()
}

// publishForged publishes n messages; every third carries a Nats-Pin-Id
// header of its own (one value, several, an empty one, in turn), and so
// does the last. It returns the last stream sequence.
func (e *env) publishForged(n int, wave string) uint64 {
	e.t.Helper()
	forged := []nats.Header{
		{"Nats-Pin-Id": {"forged-" + wave}},
		{"Nats-Pin-Id": {"forged-a-" + wave, "forged-b-" + wave}},
		{"Nats-Pin-Id": {""}},
	}
	var last uint64
	for i := range n {
		m := &nats.Msg{Subject: fmt.Sprintf("%s.s%d", e.stream, i%5), Data: fmt.Appendf(nil, `{"wave": %q, "i": %d}`, wave, i)}
		if i%3 == 0 || i == n-1 {
			m.Header = forged[i/3%len(forged)]
		}
		ack, err := e.js.PublishMsg(context.Background(), m)
		if err != nil {
			e.t.Fatal(err)
		}
		last = ack.Sequence
	}
	return last
}

// A publisher sets Nats-Pin-Id headers of its own (the server adds its pin
// after them) on an unpinned, a pinned and a partitioned connector. Every
// message is still exported once, within seconds, and the instance takes
// the pin over once per consumer, not for every forged header.
//
// Before, jetlake read the header's first value, took each forged one for
// a new pin and recovered again and again (no message was exported); and
// nats.go, which keeps the first value as its own pin, sent it with its
// next pull, which the server refused: the consumer delivered nothing more
// until the priority timeout unpinned it. A consumer without a priority
// group fared worse: the forged id went out with its next pull, which the
// server refused as not a pinned consumer's (400), and the pulls ended.
func TestForgedPinHeadersNeitherStopNorSlowAnExport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		partitions int
	}{
		{"unpinned", 0},
		{"pinned", 1},
		{"partitioned", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvAckWait(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 1000\nmax_file_age = \"1s\"", "30s")
			var c *config.Connector
			switch {
			case tc.partitions == 0:
				c = e.connector()
			case tc.partitions > 1:
				c = e.partitioned(tc.partitions, "10s")
				// partitioned sets a 5 s priority timeout; 15 s keeps a pin
				// lost to a forged header apart from an export in seconds.
				body, err := os.ReadFile(e.file)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(e.file, []byte(strings.Replace(string(body), `priority_timeout = "5s"`, `priority_timeout = "15s"`, 1)), 0o644); err != nil {
					t.Fatal(err)
				}
				c = e.connector()
			default:
				c = e.pinnedFor("15s")
			}
			var pinned atomic.Int64
			log := slog.New(countingHandler{testLogger(t).Handler(), "pinned: this instance is active", &pinned})
			ex, err := exporter.New(c, exporter.Options{Logger: log, Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			done := make(chan error, 1)
			go func() { done <- ex.Run(ctx) }()

			if tc.partitions > 1 {
				waitFor(t, 20*time.Second, "every partition held", func() bool {
					return shares(e.leaseHolders(c), 1, tc.partitions, tc.partitions, tc.partitions)
				})
			}
			exported := func(last uint64, within time.Duration, what string) {
				t.Helper()
				start := time.Now()
				waitFor(t, within, what, func() bool { return uint64(len(e.read().bySeq)) >= last })
				t.Logf("%s in %s", what, time.Since(start).Round(time.Millisecond))
			}
			// More than half a pull's batch (at most 1,000 messages): a
			// pull goes out while the wave is read, after a forged header.
			last := e.publishForged(1200, "1")
			exported(last, 20*time.Second, "the first wave exported")
			// The pull that follows the last, forged, message goes out
			// after the pull's expiry (a third of the priority timeout):
			// the second wave comes after it.
			time.Sleep(7 * time.Second)
			last = e.publishForged(30, "2")
			exported(last, 4*time.Second, "the second wave exported")
			time.Sleep(6 * time.Second)
			last = e.publishForged(30, "3")
			exported(last, 4*time.Second, "the third wave exported")
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			e.wantExactlyOnce(e.read(), last)
			if n := pinned.Load(); n > int64(tc.partitions) {
				t.Fatalf("%d takeovers (%q), want at most one per consumer (%d)", n, "pinned: this instance is active", tc.partitions)
			}
		})
	}
}
