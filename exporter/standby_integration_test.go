package exporter_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/metrics"
)

// The log messages of a pinned instance that the standby tests count.
const (
	pinnedActiveMsg  = "pinned: this instance is active"
	consumerMovedMsg = "the consumer would not deliver sequences the export record lacks: it delivers from the first of them now"
	unpinnedMovedMsg = "nobody is pinned to the consumer, which delivered past the export record: moved back, for the instance pinned next"
)

// instance is one exporter of a connector run in the test process, with
// its own metrics and counts of the log lines the standby tests look for.
type instance struct {
	name    string
	ex      *exporter.Exporter
	reg     *prometheus.Registry
	pinned  atomic.Int64 // pinnedActiveMsg logged
	moved   atomic.Int64 // consumerMovedMsg logged
	unpins  atomic.Int64 // unpinnedMovedMsg logged
	stop    context.CancelFunc
	stopped chan struct{} // closed when Run returned err
	err     error
}

// startInstance runs c as the instance called name until ctx ends or it is
// stopped. A test that ends early stops it and waits for it.
func (e *env) startInstance(ctx context.Context, c *config.Connector, name string) *instance {
	e.t.Helper()
	in := &instance{name: name, reg: prometheus.NewRegistry(), stopped: make(chan struct{})}
	var h slog.Handler = testLogger(e.t).With("instance", name).Handler()
	h = countingHandler{h, pinnedActiveMsg, &in.pinned}
	h = countingHandler{h, consumerMovedMsg, &in.moved}
	h = countingHandler{h, unpinnedMovedMsg, &in.unpins}
	ex, err := exporter.New(c, exporter.Options{Logger: slog.New(h), Version: "test", Metrics: metrics.New(in.reg)})
	if err != nil {
		e.t.Fatal(err)
	}
	in.ex = ex
	ctx, in.stop = context.WithCancel(ctx)
	go func() {
		in.err = ex.Run(ctx)
		close(in.stopped)
	}()
	e.t.Cleanup(func() { in.stop(); <-in.stopped })
	return in
}

// wait stops the instance and returns what its Run returned.
func (in *instance) wait() error {
	in.stop()
	<-in.stopped
	return in.err
}

// metric returns the sum of the instance's series of jetlake_<name>.
func (in *instance) metric(name string, labels map[string]string) float64 {
	return metricSum(in.reg, "jetlake_"+name, labels)
}

// publishSteadily publishes about perSecond messages a second, round-robin
// over five subjects, until stop is closed or within has passed. It sends
// the last stream sequence, or an error, on the channel it returns.
func (e *env) publishSteadily(perSecond int, within time.Duration, stop <-chan struct{}) <-chan publishResult {
	out := make(chan publishResult, 1)
	go func() {
		const tick = 10 * time.Millisecond
		each := max(1, perSecond*int(tick)/int(time.Second))
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		deadline := time.After(within)
		var res publishResult
		defer func() { out <- res }()
		for i := 0; ; {
			select {
			case <-stop:
				return
			case <-deadline:
				return
			case <-ticker.C:
			}
			for range each {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				ack, err := e.js.Publish(ctx, fmt.Sprintf("%s.s%d", e.stream, i%5), fmt.Appendf(nil, `{"i": %d}`, i))
				cancel()
				if err != nil {
					res.err = fmt.Errorf("publish %d: %w", i, err)
					return
				}
				res.last = ack.Sequence
				i++
			}
		}
	}()
	return out
}

type publishResult struct {
	last uint64
	err  error
}

// Two instances of a connector with failover = "pinned", messages flowing.
// The active instance's NATS link freezes for 20 s while it holds hundreds
// of deliveries; the standby is pinned after the priority timeout and
// exports. When the link thaws, the old instance, no longer pinned, leaves
// the consumer alone: it never moves it back (no "would not deliver" line,
// consumer_rebuilds_total{reason="skips"} 0), the pinned instance is not
// delivered the tail over and over, and every sequence lands exactly once.
//
// Before, the old instance compared the stream with its own stale ledger,
// without asking whether it was still pinned, and from the thaw until it
// was stopped moved the consumer back about every 5.3 s: 5 times in the
// 20 s after the thaw, in each of two runs. Exactly-once held, but about
// 12,750 messages took 60,500 deliveries (4.7x), 59,400 of them to the
// pinned instance.
func TestAStandbyThatLostThePinNeverMovesTheConsumer(t *testing.T) {
	t.Parallel()
	e := newEnvAckWait(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 1000\nmax_file_age = \"2s\"", "10s")
	cB := e.pinnedFor("5s")
	cA := e.connector()
	link := exportertest.NewLink(t, strings.TrimPrefix(e.nats.URL, "nats://"))
	cA.NATS.URL = "nats://" + link.Addr

	ctx := context.Background()
	stopPublishing := make(chan struct{})
	published := e.publishSteadily(300, 90*time.Second, stopPublishing)
	defer func() {
		select {
		case <-stopPublishing:
		default:
			close(stopPublishing)
		}
	}()

	a := e.startInstance(ctx, cA, "A")
	t.Cleanup(link.Thaw) // before the instances stop, should the test end frozen
	waitFor(t, 30*time.Second, "instance A pinned and exporting", func() bool {
		return a.pinned.Load() > 0 && a.metric("messages_acked_total", nil) > 0
	})
	b := e.startInstance(ctx, cB, "B")
	waitFor(t, 30*time.Second, "instance B ready, as a standby", func() bool { return b.ex.Ready() == nil })
	if b.metric("messages_received_total", nil) != 0 {
		t.Fatal("the standby was delivered messages while the other instance was pinned")
	}
	waitFor(t, 10*time.Second, "instance A holding hundreds of deliveries", func() bool {
		return a.metric("buffered_messages", nil) >= 200
	})
	held := a.metric("buffered_messages", nil)
	link.Freeze()
	frozenAt := time.Now()
	waitFor(t, 20*time.Second, "instance B pinned and exporting while A's link is frozen", func() bool {
		return b.pinned.Load() > 0 && b.metric("messages_acked_total", nil) > 0
	})
	t.Logf("A froze holding %v deliveries; B pinned and exporting after %s", held, time.Since(frozenAt).Round(100*time.Millisecond))
	// The link stays frozen 20 s in all, as in the issue: the old
	// instance's deliveries are long past ack_wait when it thaws.
	time.Sleep(time.Until(frozenAt.Add(20 * time.Second)))
	link.Thaw()
	// Nothing to wait for: the defect is what happens in this time. The
	// old instance moved the consumer back every 5.3 s or so; 20 s showed
	// five moves.
	time.Sleep(20 * time.Second)
	close(stopPublishing)
	res := <-published
	if res.err != nil {
		t.Fatal(res.err)
	}
	last := res.last
	waitFor(t, time.Minute, "every sequence exported", func() bool { return uint64(len(e.read().bySeq)) >= last })
	for _, in := range []*instance{a, b} {
		if err := in.wait(); err != nil {
			t.Fatalf("instance %s: %v", in.name, err)
		}
	}
	received := a.metric("messages_received_total", nil) + b.metric("messages_received_total", nil)
	t.Logf("%d messages; deliveries: A %v, B %v (%.1fx); consumer moved back: A %d, B %d",
		last, a.metric("messages_received_total", nil), b.metric("messages_received_total", nil), received/float64(last), a.moved.Load(), b.moved.Load())
	if received > 2*float64(last) {
		t.Errorf("%v deliveries for %d messages; a handover redelivers what the old instance held, not the stream's tail again and again", received, last)
	}
	skips := map[string]string{"reason": "skips"}
	if n, rebuilt := a.moved.Load(), a.metric("consumer_rebuilds_total", skips); n != 0 || rebuilt != 0 {
		t.Errorf("the instance that lost the pin moved the consumer back %d times (%q), consumer_rebuilds_total{reason=\"skips\"} %v; want never", n, consumerMovedMsg, rebuilt)
	}
	e.wantExactlyOnce(e.read(), last)
}

// One instance of a pinned connector, read ack-less, active and caught up.
// Its link freezes past the priority timeout, and another client of the
// priority group is pinned in its place, takes the messages published
// meanwhile and goes away without exporting them: the consumer has
// delivered them, nothing is pending and, once that client's pin lapses,
// nobody is pinned. The server pins an instance only on a message it
// delivers, so none would come again. The active instance, its link back,
// moves the consumer back to the first sequence its record lacks and
// exports them, once each.
//
// Before, only a standby (an instance with no ledger yet) looked for a
// consumer pinned to nobody; the active instance's walks were left to the
// instance pinned now, which was nobody, and those messages stayed
// unexported for good.
func TestAnActiveInstanceTakesBackWhatAClientPinnedInItsPlaceLeft(t *testing.T) {
	t.Parallel()
	e := newEnvAckWait(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 1000\nmax_file_age = \"1s\"", "10s")
	c := e.pinnedFor("5s")
	link := exportertest.NewLink(t, strings.TrimPrefix(e.nats.URL, "nats://"))
	c.NATS.URL = "nats://" + link.Addr
	ctx := context.Background()
	a := e.startInstance(ctx, c, "A")
	t.Cleanup(link.Thaw)

	last := e.publish(100, 5)
	waitFor(t, 30*time.Second, "the first messages exported", func() bool { return uint64(len(e.read().bySeq)) >= last })
	cons, err := e.js.Consumer(ctx, e.stream, "c"+e.stream)
	if err != nil {
		t.Fatal(err)
	}
	if info := cons.CachedInfo(); info.Config.AckPolicy != jetstream.AckNonePolicy {
		t.Fatalf("the consumer of a limits stream acks %v, want none", info.Config.AckPolicy)
	}

	link.Freeze()
	unpinned := func() bool {
		info, err := cons.Info(ctx)
		return err == nil && jsclient.PinnedIn(info) == ""
	}
	// The frozen instance's pulls expire within a third of the priority
	// timeout, and its pin with the timeout: what is published after goes
	// to the next client pinned.
	waitFor(t, 15*time.Second, "the frozen instance's pin lapsed", unpinned)
	last = e.publish(50, 5)
	taken := 0
	waitFor(t, 30*time.Second, "another client pinned in the frozen instance's place, taking the new messages", func() bool {
		batch, err := cons.Fetch(50-taken, jetstream.FetchPriorityGroup(jsclient.PriorityGroup), jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return false
		}
		for range batch.Messages() {
			taken++
		}
		return taken == 50
	})
	waitFor(t, 15*time.Second, "the consumer pinned to nobody, with nothing pending", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumPending == 0 && info.Delivered.Stream == last && unpinned()
	})
	link.Thaw()
	waitFor(t, 45*time.Second, "the messages the other client took exported", func() bool { return uint64(len(e.read().bySeq)) >= last })
	if err := a.wait(); err != nil {
		t.Fatal(err)
	}
	e.wantExactlyOnce(e.read(), last)
	if a.unpins.Load() == 0 {
		t.Errorf("the instance exported what it was never delivered again without moving the consumer back (%q)", unpinnedMovedMsg)
	}
}
