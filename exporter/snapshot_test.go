package exporter

import (
	"sync"
	"testing"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/metrics"
)

// Snapshot reads the connector's own series of the metrics it shares with
// other connectors: exported messages, and pending only once every stream's
// consumers were read; Done means nothing is pending.
func TestSnapshotReadsTheConnectorsMetrics(t *testing.T) {
	m := metrics.New(nil)
	cfg := &config.Connector{Name: "events", Streams: []config.Stream{{Stream: "A"}, {Stream: "B"}}}
	e := &Exporter{cfg: cfg, m: m}
	m.Acked.WithLabelValues("other", "A").Add(500)
	m.Pending.WithLabelValues("other", "A").Set(7)
	m.AckPending.WithLabelValues("other", "B").Set(7)
	if s := e.Snapshot(); s != (Snapshot{Connector: "events"}) {
		t.Fatalf("before any export: %+v", s)
	}
	m.Acked.WithLabelValues("events", "A").Add(100)
	m.Acked.WithLabelValues("events", "B").Add(20)
	m.Pending.WithLabelValues("events", "A").Set(1000)
	m.AckPending.WithLabelValues("events", "A").Set(50)
	if s := e.Snapshot(); s.Exported != 120 || s.PendingKnown || s.Pending != 0 {
		t.Fatalf("stream B's consumer not read yet: %+v, want 120 exported, pending unknown", s)
	}
	m.Pending.WithLabelValues("events", "B").Set(3)
	m.AckPending.WithLabelValues("events", "B").Set(0)
	if s := e.Snapshot(); s.Exported != 120 || !s.PendingKnown || s.Pending != 1053 {
		t.Fatalf("every consumer read: %+v, want 120 exported, 1053 pending", s)
	}
	e.done.Store(true)
	if s := e.Snapshot(); !s.Done || !s.PendingKnown || s.Pending != 0 {
		t.Fatalf("done: %+v, want nothing pending", s)
	}
}

// Snapshot is read from another goroutine while the runner counts.
func TestSnapshotIsSafeBesideTheRunner(t *testing.T) {
	m := metrics.New(nil)
	e := &Exporter{cfg: &config.Connector{Name: "events", Streams: []config.Stream{{Stream: "A"}}}, m: m}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 1000 {
			m.Acked.WithLabelValues("events", "A").Inc()
			m.Pending.WithLabelValues("events", "A").Dec()
		}
	})
	var last uint64
	for range 100 {
		s := e.Snapshot()
		if s.Exported < last {
			t.Fatalf("exported went back from %d to %d", last, s.Exported)
		}
		last = s.Exported
	}
	wg.Wait()
	if s := e.Snapshot(); s.Exported != 1000 {
		t.Fatalf("exported %d, want 1000", s.Exported)
	}
}
