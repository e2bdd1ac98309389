package exporter_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/internal/metrics"
)

func TestEverySequenceLandsInExactlyOneObject(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "64KiB"
max_messages_per_file = 700
max_file_age = "20s"
max_buffered_bytes = "8MiB"`)
	const n = 20000
	last := e.publish(n, 10)
	start := time.Now()
	e.runUntilIdle(e.connector(), 2*time.Minute)
	elapsed := time.Since(start)
	t.Logf("exported %d messages in %s: %.0f messages/s", n, elapsed.Round(time.Millisecond), n/elapsed.Seconds())
	got := e.read()
	e.wantExactlyOnce(got, last)
	if got.objects < n/700 {
		t.Fatalf("%d objects; rotation at 700 messages needs at least %d", got.objects, n/700)
	}
	e.wantAllAcked()
}

func TestQuietSubjectIsFlushedByAge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 10000
max_file_age = "2s"`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, _ := e.run(ctx, e.connector(), false)
	last := e.publish(5, 1)
	start := time.Now()
	waitFor(t, 20*time.Second, "the quiet subject's object", func() bool { return len(e.read().bySeq) == 5 })
	if d := time.Since(start); d < time.Second {
		t.Fatalf("object appeared after %s, before the age limit", d)
	}
	e.wantExactlyOnce(e.read(), last)
	waitFor(t, 10*time.Second, "acks", func() bool { return e.consumerInfo().NumAckPending == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// MaxAckPending holds back deliveries of a stream read with explicit acks
// (here a work-queue stream's; a limits stream is read without acks).
func TestMaxAckPendingBelowOneRotationStillProgresses(t *testing.T) {
	t.Parallel()
	e := newEnvRetention(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 10000
max_file_age = "25s"`, "1m", jetstream.WorkQueuePolicy)
	c := e.connector()
	c.Streams[0].MaxAckPending = 50
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	last := e.publish(1000, 2)
	start := time.Now()
	e.runUntilIdle(c, time.Minute)
	// Waiting for the age limit would take 25s per round of 50 messages,
	// 500s in all; a batch that waited is written for its age. How long
	// the run took is only logged: on a loaded machine the rounds that do
	// not wait can take 30s too.
	t.Logf("took %s", time.Since(start))
	if aged := metricSum(reg, "jetlake_objects_written_total", map[string]string{"reason": "age"}); aged != 0 {
		t.Fatalf("%v objects written for their age: the exporter waited for messages MaxAckPending held back", aged)
	}
	if relieved := metricSum(reg, "jetlake_objects_written_total", map[string]string{"reason": "pending"}); relieved == 0 {
		t.Fatal("no object written because MaxAckPending held messages back")
	}
	e.wantExactlyOnce(e.read(), last)
	e.wantAllAcked()
	if mp := e.consumerInfo().Config.MaxAckPending; mp != 50 {
		t.Fatalf("consumer MaxAckPending = %d, want 50", mp)
	}
}

func TestInterestAndWorkQueueStreamsExportEverything(t *testing.T) {
	t.Parallel()
	for _, rp := range []jetstream.RetentionPolicy{jetstream.InterestPolicy, jetstream.WorkQueuePolicy} {
		t.Run(rp.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnvRetention(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 300
max_file_age = "20s"`, "1m", rp)
			// Create the consumer first: an interest stream keeps only
			// messages some consumer is interested in.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := e.connector()
			boot, cancelBoot := context.WithCancel(ctx)
			done, _ := e.run(boot, c, false)
			waitFor(t, 20*time.Second, "the consumer", func() bool { return e.consumerInfo().NumPending == 0 })
			cancelBoot()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			last := e.publish(2000, 4)
			done, _ = e.run(ctx, c, true)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			e.wantExactlyOnce(e.read(), last)
			e.wantAllAcked()
			st, err := e.js.Stream(ctx, e.stream)
			if err != nil {
				t.Fatal(err)
			}
			if n := st.CachedInfo().State.Msgs; n != 0 {
				t.Fatalf("%s stream still holds %d messages after every one was acked", rp, n)
			}
		})
	}
}
