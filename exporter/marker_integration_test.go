package exporter_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jetlake/jetlake/exporter"
)

func TestGapWhileStoppedGetsAMarkerNamingExactlyTheDiscardedRange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := e.connector()
	e.publish(200, 2)
	done, _ := e.run(ctx, c, true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// While the exporter is stopped the stream keeps only 300 messages: of
	// the next 1000 (201-1200), 201-900 are discarded.
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs = 300
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	last := e.publish(1000, 2)
	done, _ = e.run(ctx, c, true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reports := e.verify(c)
	markers := reports[0].Markers
	if len(markers) != 1 {
		t.Fatalf("%d loss markers, want 1", len(markers))
	}
	m := markers[0]
	if m.Reason != "gap" || m.FirstSeq != 201 || m.LastSeq != 900 || m.Count != 700 {
		t.Fatalf("marker %+v, want a gap of 201-900 (700 messages)", m)
	}
	got := e.read()
	for q := uint64(1); q <= last; q++ {
		_, in := got.bySeq[q]
		if in == (q >= 201 && q <= 900) {
			t.Fatalf("sequence %d: in an object = %v", q, in)
		}
	}
	e.wantAllAcked()
}

func TestPoisonMessageIsTerminatedAndMarkedWhileTheSubjectFlows(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.publish(10, 1)
	// Two in a row, larger than the store takes in one object (set to
	// 128 KiB here): they share one marker.
	for range 2 {
		if _, err := e.js.Publish(ctx, e.stream+".s0", bytes.Repeat([]byte("x"), 200<<10)); err != nil {
			t.Fatal(err)
		}
	}
	last := e.publish(10, 1)
	c := e.connector()
	ex, err := exporter.New(c, exporter.Options{Logger: testLogger(t), UntilIdle: true, MaxObjectSize: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Run(ctx); err != nil {
		t.Fatal(err)
	}
	reports := e.verify(c)
	if len(reports[0].Markers) != 1 {
		t.Fatalf("%d markers, want 1", len(reports[0].Markers))
	}
	m := reports[0].Markers[0]
	if m.Reason != "poison" || m.FirstSeq != 11 || m.LastSeq != 12 || m.Count != 2 || m.Subject != e.stream+".s0" || m.Error == "" {
		t.Fatalf("marker %+v, want poison 11-12 on %s.s0", m, e.stream)
	}
	got := e.read()
	if len(got.bySeq) != int(last)-2 {
		t.Fatalf("%d messages exported, want %d", len(got.bySeq), last-2)
	}
	e.wantAllAcked()
}

// Messages published after the consumer existed are in scope even when
// nothing was delivered yet: removed before the first run that reads them,
// they get a marker.
func TestGapBeforeTheFirstDeliveryGetsAMarker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	c := e.connector()
	// A first run with nothing to deliver creates the consumer.
	e.runUntilIdle(c, time.Minute)
	ctx := context.Background()
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs = 10
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	last := e.publish(30, 1) // the stream keeps 21-30
	e.runUntilIdle(c, time.Minute)
	reports := e.verify(c)
	if r := reports[0]; len(r.Markers) != 1 || r.Messages != 10 {
		t.Fatalf("%d markers and %d messages exported; want one marker and 10 messages", len(r.Markers), r.Messages)
	}
	if m := reports[0].Markers[0]; m.Reason != "gap" || m.FirstSeq != 1 || m.LastSeq != 20 || m.Count != 20 {
		t.Fatalf("marker %+v, want a gap of 1-20 (20 messages)", m)
	}
	got := e.read()
	for q := uint64(1); q <= last; q++ {
		if _, in := got.bySeq[q]; in != (q > 20) {
			t.Fatalf("sequence %d: in an object = %v", q, in)
		}
	}
	e.wantAllAcked()
}
