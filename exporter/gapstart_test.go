package exporter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Messages published after the consumer existed are in scope even when
// nothing was delivered yet: removed before the first run that reads them,
// they get a marker.
func TestGapBeforeTheFirstDeliveryGetsAMarker(t *testing.T) {
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

// A collision is permanent: every run stops with it, none retries it
// forever, and once the connector has a prefix of its own the refused
// batch is exported there.
func TestACollisionStopsEveryRunUntilTheConnectorHasItsOwnPrefix(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.publish(5, 1)
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := e.connector()
	dir := c.Output.PathTemplate.Dir(&pathtemplate.Values{Stream: e.stream, Subject: first.Subject, Time: first.Time})
	key, _ := pathtemplate.Key("raw", dir, 1, 5, "jsonl")
	if _, err := e.mc.PutObject(ctx, e.bucket, key, strings.NewReader("{}\n"), 3, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		rctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		done, _ := e.run(rctx, c, true)
		err := <-done
		cancel()
		var ce *exporter.CollisionError
		if !errors.As(err, &ce) || ce.Key != key || ce.Marker {
			t.Fatalf("run %d = %v, want a collision of data objects on %s", run, err, key)
		}
		if info := e.consumerInfo(); info.AckFloor.Stream != 0 {
			t.Fatalf("run %d: ack floor %d after a collision; nothing may be acked", run, info.AckFloor.Stream)
		}
	}
	c.S3.Prefix = "own"
	e.runUntilIdle(c, time.Minute)
	if r := e.verify(c)[0]; r.Messages != 5 || len(r.Markers) != 0 {
		t.Fatalf("under its own prefix: %d messages, %d markers; want 5 and none", r.Messages, len(r.Markers))
	}
	e.wantAllAcked()
}
