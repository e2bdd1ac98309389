package exporter_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/metrics"
)

// cursorEnv exports 2,000 messages with the given deliver policy, then
// leaves the consumer to change, while the exporter is stopped, and
// publishes 1,000 more: it returns the env, the connector and the last
// sequence.
func cursorEnv(t *testing.T, policy string, change func(e *env, c *config.Connector)) (*env, *config.Connector, uint64) {
	t.Helper()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 250\nmax_file_age = \"1s\"")
	c := e.connector()
	c.Streams[0].DeliverPolicy = policy
	e.runUntilIdle(c, time.Minute) // makes the consumer; with "new", at the stream's end
	e.publish(2000, 5)
	e.runUntilIdle(c, time.Minute)
	change(e, c)
	last := e.publish(1000, 5)
	return e, c, last
}

// exportedWhileRunning waits until sequences 1..last are exported by the
// exporter whose Run reports on done, which must not stop meanwhile; then
// it stops it cleanly and checks each sequence is in exactly one object.
func (e *env) exportedWhileRunning(done <-chan error, stop context.CancelFunc, last uint64) {
	e.t.Helper()
	waitFor(e.t, time.Minute, "every message exported", func() bool {
		select {
		case err := <-done:
			e.t.Fatalf("the exporter stopped: %v", err)
		default:
		}
		return uint64(len(e.read().bySeq)) == last
	})
	stop()
	if err := <-done; err != nil {
		e.t.Fatal(err)
	}
	e.wantExactlyOnce(e.read(), last)
}

// deleteConsumer deletes the connector's consumer.
func (e *env) deleteConsumer(c *config.Connector) {
	e.t.Helper()
	if err := e.js.DeleteConsumer(context.Background(), e.stream, c.Streams[0].Consumer); err != nil {
		e.t.Fatal(err)
	}
}

// A consumer deleted while jetlake is stopped (by an operator, or a server
// that lost a memory consumer) is created again delivering from the first
// sequence the export record lacks, whatever deliver_policy says: every
// sequence lands once, and only the messages not exported yet are
// delivered.
func TestAConsumerDeletedWhileStoppedResumesFromTheExportRecord(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{config.DeliverNew, config.DeliverAll} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			e, c, last := cursorEnv(t, policy, func(e *env, c *config.Connector) { e.deleteConsumer(c) })
			reg := prometheus.NewRegistry()
			e.metrics = metrics.New(reg)
			e.runUntilIdle(c, time.Minute)
			e.wantExactlyOnce(e.read(), last)
			e.wantAllAcked()
			if got := metricSum(reg, "jetlake_messages_received_total", nil); got != 1000 {
				t.Errorf("received %v messages; want the 1000 not exported yet", got)
			}
			if got := metricSum(reg, "jetlake_consumer_rebuilds_total", map[string]string{"reason": "missing"}); got != 1 {
				t.Errorf("consumer_rebuilds_total{reason=missing} %v; want 1", got)
			}
		})
	}
}

// A consumer someone else re-created while jetlake was stopped, with
// deliver policy new, would never deliver what was published while it was
// missing: jetlake finds the sequences the stream holds and the record
// lacks below where the consumer delivered, and moves the consumer back
// to them (at start, since it takes no acks, as a limits stream's does).
func TestAConsumerRecreatedWithDeliverNewIsMovedBackToTheExportRecord(t *testing.T) {
	t.Parallel()
	e, c, last := cursorEnv(t, config.DeliverAll, func(e *env, c *config.Connector) { e.deleteConsumer(c) })
	_, err := e.js.CreateConsumer(context.Background(), e.stream, jetstream.ConsumerConfig{
		Durable:       c.Streams[0].Consumer,
		AckPolicy:     jetstream.AckNonePolicy,
		MaxDeliver:    -1,
		DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	e.runUntilIdle(c, time.Minute)
	e.wantExactlyOnce(e.read(), last)
	e.wantAllAcked()
	skips := metricSum(reg, "jetlake_consumer_rebuilds_total", map[string]string{"reason": "skips"})
	behind := metricSum(reg, "jetlake_consumer_rebuilds_total", map[string]string{"reason": "behind"})
	if skips+behind != 1 {
		t.Errorf("consumer_rebuilds_total{reason=skips} %v, {reason=behind} %v; want one move in all", skips, behind)
	}
}

// A consumer deleted while jetlake runs is created again from the export
// record without stopping the exporter: what was published before and
// after lands once.
func TestAConsumerDeletedWhileRunningIsRecreatedInPlace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 250\nmax_file_age = \"1s\"")
	c := e.connector()
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done, _ := e.run(ctx, c, false)
	first := e.publish(1000, 5)
	waitFor(t, time.Minute, "the first messages exported", func() bool {
		return uint64(len(e.read().bySeq)) == first
	})
	e.deleteConsumer(c)
	last := e.publish(1000, 5)
	e.exportedWhileRunning(done, stop, last)
	if got := metricSum(reg, "jetlake_consumer_rebuilds_total", map[string]string{"reason": "missing"}); got != 1 {
		t.Errorf("consumer_rebuilds_total{reason=missing} %v; want 1", got)
	}
}

// A memory consumer is gone after a nats-server restart: jetlake, holding
// unacked messages in its buffers meanwhile, creates it again from the
// export record, and every sequence lands once.
func TestAMemoryConsumerLostInAServerRestartIsRebuiltFromTheRecord(t *testing.T) {
	t.Parallel()
	ns := exportertest.NATS(t, exportertest.NATSOptions{})
	e := newEnv(t, ns, shared.MinIO(t), "max_messages_per_file = 5000\nmax_file_age = \"15s\"")
	c := e.connector()
	c.Streams[0].ConsumerStorage = config.StorageMemory
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done, _ := e.run(ctx, c, false)
	first := e.publish(500, 5)
	waitFor(t, 30*time.Second, "the first messages exported", func() bool { return uint64(len(e.read().bySeq)) == first })
	e.publish(500, 5)
	waitFor(t, 30*time.Second, "delivery to the exporter", func() bool {
		info := e.consumerInfo()
		return info.NumPending == 0 && info.NumAckPending == 500
	})
	if !e.consumerInfo().Config.MemoryStorage {
		t.Fatal("the consumer keeps its state in a file; want memory")
	}
	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	last := e.publish(500, 5)
	e.exportedWhileRunning(done, stop, last)
	if got := metricSum(reg, "jetlake_consumer_rebuilds_total", map[string]string{"reason": "missing"}); got < 1 {
		t.Errorf("consumer_rebuilds_total{reason=missing} %v; want at least 1", got)
	}
}

// An existing consumer keeps its storage while consumer_storage is not
// set; set, the consumer is made again where it says, from the export
// record, and nothing is exported twice.
func TestConsumerStorageSetRebuildsTheConsumerFromTheRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 250\nmax_file_age = \"1s\"")
	c := e.connector()
	c.Streams[0].ConsumerStorage = config.StorageFile
	e.publish(1000, 5)
	e.runUntilIdle(c, time.Minute)
	if e.consumerInfo().Config.MemoryStorage {
		t.Fatal("consumer_storage = file made a memory consumer")
	}
	c.Streams[0].ConsumerStorage = ""
	last := e.publish(500, 5)
	e.runUntilIdle(c, time.Minute)
	if e.consumerInfo().Config.MemoryStorage {
		t.Fatal("without consumer_storage, the file consumer was made again in memory")
	}
	c.Streams[0].ConsumerStorage = config.StorageMemory
	last = e.publish(500, 5)
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	e.runUntilIdle(c, time.Minute)
	info := e.consumerInfo()
	if !info.Config.MemoryStorage {
		t.Fatal("consumer_storage = memory left the consumer in a file")
	}
	e.wantExactlyOnce(e.read(), last)
	e.wantAllAcked()
	if got := metricSum(reg, "jetlake_messages_received_total", nil); got != 500 {
		t.Errorf("received %v messages after the rebuild; want the 500 not exported yet", got)
	}
	if got := metricSum(reg, "jetlake_consumer_rebuilds_total", map[string]string{"reason": "storage"}); got != 1 {
		t.Errorf("consumer_rebuilds_total{reason=storage} %v; want 1", got)
	}
}

// An ack-less consumer's delivered sequence goes back with a move (or a
// consumer leader elected after a node loss): verify's default scope still
// reaches the highest sequence the lake holds, and checks it all.
func TestVerifyScopeReachesWhatTheLakeHoldsAfterTheConsumerMovedBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 250\nmax_file_age = \"1s\"")
	c := e.connector()
	last := e.publish(2000, 5)
	e.runUntilIdle(c, time.Minute)
	ctx := context.Background()
	if _, err := e.js.ResetConsumerToSequence(ctx, e.stream, c.Streams[0].Consumer, 1); err != nil {
		t.Fatal(err)
	}
	cons, err := e.js.Consumer(ctx, e.stream, c.Streams[0].Consumer)
	if err != nil {
		t.Fatal(err)
	}
	if got := cons.CachedInfo().Delivered.Stream; got >= last {
		t.Fatalf("after the reset the consumer says it delivered up to %d; the test needs less than %d", got, last)
	}
	if r := e.verify(c)[0]; r.Scope.Last != last || r.Messages != int(last) {
		t.Fatalf("verify: scope %v, %d messages; want 1-%d, all of them", r.Scope, r.Messages, last)
	}
}
