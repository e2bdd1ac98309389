package exporter_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/jsclient"
)

// A limits stream is read without acks: its consumer takes none, none is
// sent, and the server holds no pending set; what is exported is what the
// export record says. A consumer made with explicit acks (by an earlier
// release) is rebuilt from the record, and nothing is exported twice.
func TestALimitsStreamIsReadWithoutAcks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 200
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := e.connector()
	// The consumer an earlier release made, with explicit acks, and the
	// first part exported by a run that read it so.
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsumer(ctx, jsclient.Settings(c.Name, c.Streams[0], jsclient.ModeFor(jetstream.WorkQueuePolicy))); err != nil {
		t.Fatal(err)
	}
	if got := e.consumerInfo().Config.AckPolicy; got != jetstream.AckExplicitPolicy {
		t.Fatalf("ack policy %s before the run, want explicit", got)
	}

	// Any ack, InProgress or NAK on the stream's consumer is counted.
	var acks atomic.Int64
	sub, err := e.nc.Subscribe("$JS.ACK."+e.stream+".>", func(*nats.Msg) { acks.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	last := e.publish(1000, 4)
	done, _ := e.run(ctx, c, false)
	waitFor(t, time.Minute, "everything exported", func() bool { return e.consumerInfo().AckFloor.Stream == last })
	info := e.consumerInfo()
	if info.Config.AckPolicy != jetstream.AckNonePolicy {
		t.Fatalf("ack policy %s during the run, want none", info.Config.AckPolicy)
	}
	if from := info.Config.Metadata[jsclient.MetaDeliverFrom]; from != "1" {
		t.Fatalf("metadata %s = %q, want 1: the rebuilt consumer starts at the record's first missing sequence", jsclient.MetaDeliverFrom, from)
	}
	last = e.publish(500, 5)
	waitFor(t, time.Minute, "the second part exported", func() bool { return e.consumerInfo().AckFloor.Stream == last })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := acks.Load(); n != 0 {
		t.Fatalf("%d acks sent to a consumer that takes none", n)
	}
	e.wantExactlyOnce(e.read(), last)
	e.verify(c)
}

// A work-queue stream keeps explicit acks: while the store is down its
// messages stay in the stream, delivered and unacked, and they leave it
// only once their objects are stored.
func TestAWorkQueueStreamKeepsExplicitAcks(t *testing.T) {
	t.Parallel()
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	e := newEnvRetention(t, shared.NATS(t), ms, `
max_messages_per_file = 100
max_file_age = "1s"`, "1m", jetstream.WorkQueuePolicy)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done, ex := e.run(ctx, e.connector(), false)
	waitFor(t, 20*time.Second, "the exporter to be ready", func() bool { return ex.Ready() == nil })
	if got := e.consumerInfo().Config.AckPolicy; got != jetstream.AckExplicitPolicy {
		t.Fatalf("ack policy %s, want explicit", got)
	}
	if err := ms.Kill(); err != nil {
		t.Fatal(err)
	}
	last := e.publish(300, 3)
	waitFor(t, 20*time.Second, "delivery to the exporter", func() bool { return e.consumerInfo().NumPending == 0 })
	for range 4 {
		time.Sleep(500 * time.Millisecond)
		if n := e.streamMsgs(ctx); n != 300 {
			t.Fatalf("the stream holds %d messages while the store is down, want 300", n)
		}
		if info := e.consumerInfo(); info.NumAckPending != 300 {
			t.Fatalf("%d unacked while the store is down, want 300", info.NumAckPending)
		}
	}
	if err := ms.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the stream emptied by the acks", func() bool { return e.streamMsgs(ctx) == 0 })
	e.wantExactlyOnce(e.read(), last)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// streamMsgs returns how many messages the test's stream holds.
func (e *env) streamMsgs(ctx context.Context) uint64 {
	e.t.Helper()
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.CachedInfo().State.Msgs
}
