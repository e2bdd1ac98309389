package exporter_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetlake/jetlake/internal/exportertest"
)

func TestS3OutageAcksNothingAndLosesNothing(t *testing.T) {
	t.Parallel()
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	e := newEnv(t, shared.NATS(t), ms, `
max_messages_per_file = 100
max_file_age = "1s"`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, _ := e.run(ctx, e.connector(), false)
	e.publish(300, 3)
	waitFor(t, 30*time.Second, "first batch exported", func() bool { return e.consumerInfo().AckFloor.Stream == 300 })

	if err := ms.Kill(); err != nil {
		t.Fatal(err)
	}
	last := e.publish(500, 5)
	// Messages are delivered to the exporter, whose uploads now fail.
	waitFor(t, 20*time.Second, "delivery to the exporter", func() bool { return e.consumerInfo().NumPending == 0 })
	floor := e.consumerInfo().AckFloor.Stream
	for range 8 {
		time.Sleep(500 * time.Millisecond)
		info := e.consumerInfo()
		if info.AckFloor.Stream != floor || info.NumAckPending != 500 {
			t.Fatalf("while S3 is down: ack floor %d (was %d), %d unacked (want 500)", info.AckFloor.Stream, floor, info.NumAckPending)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("exporter stopped during the outage: %v", err)
	default:
	}
	e.endOutage(ms, last, cancel, done)
	e.verify(e.connector())
}

func TestNATSRestartMidRunLosesNothing(t *testing.T) {
	t.Parallel()
	ns := exportertest.NATS(t, exportertest.NATSOptions{})
	e := newEnv(t, ns, shared.MinIO(t), `
max_messages_per_file = 200
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done, _ := e.run(ctx, e.connector(), false)
	e.publish(1000, 4)
	waitFor(t, 30*time.Second, "first half exported", func() bool { return e.consumerInfo().AckFloor.Stream == 1000 })
	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	last := e.publish(1000, 4)
	waitFor(t, 60*time.Second, "second half exported after the restart", func() bool {
		info := e.consumerInfo()
		return info.AckFloor.Stream == last && info.NumAckPending == 0
	})
	select {
	case err := <-done:
		t.Fatalf("exporter stopped across the NATS restart: %v", err)
	default:
	}
	e.wantExactlyOnce(e.read(), last)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.verify(e.connector())
}

// Through an outage longer than AckWait nothing jetlake holds is
// redelivered: the batch whose upload retries is kept in progress, and so
// are the batches of the same key queued behind it.
func TestOutageLongerThanAckWaitRedeliversNothing(t *testing.T) {
	t.Parallel()
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	e := newEnvAckWait(t, shared.NATS(t), ms, `
max_messages_per_file = 100
max_file_age = "1s"`, "10s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, ex := e.run(ctx, e.connector(), false)
	waitFor(t, 20*time.Second, "the exporter to be ready", func() bool { return ex.Ready() == nil })
	if err := ms.Kill(); err != nil {
		t.Fatal(err)
	}
	last := e.publish(300, 1) // three batches of one key: one uploads, two wait
	waitFor(t, 20*time.Second, "delivery to the exporter", func() bool { return e.consumerInfo().NumPending == 0 })
	for range 25 { // two and a half AckWaits
		time.Sleep(time.Second)
		if info := e.consumerInfo(); info.NumRedelivered != 0 || info.NumAckPending != 300 {
			t.Fatalf("while S3 is down: %d messages redelivered, %d unacked; want 0 and 300", info.NumRedelivered, info.NumAckPending)
		}
	}
	e.endOutage(ms, last, cancel, done)
}

// endOutage restarts MinIO, waits until every message up to last is acked,
// checks each is in exactly one object, and stops the exporter cleanly.
func (e *env) endOutage(ms *exportertest.MinIOServer, last uint64, stop context.CancelFunc, done <-chan error) {
	e.t.Helper()
	if err := ms.Restart(); err != nil {
		e.t.Fatal(err)
	}
	waitFor(e.t, 60*time.Second, "everything acked after S3 returned", func() bool {
		info := e.consumerInfo()
		return info.NumAckPending == 0 && info.AckFloor.Stream == last
	})
	e.wantExactlyOnce(e.read(), last)
	stop()
	if err := <-done; err != nil {
		e.t.Fatal(err)
	}
}
