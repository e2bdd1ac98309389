package exporter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/plan"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/internal/state"
)

// The lake is the record of last resort: a state bucket that lost the
// export record (with a consumer that is gone too, as a memory consumer
// is after a server restart) or holds one that claims what the lake and
// the consumer do not show makes jetlake rebuild the record from the lake,
// never export twice or skip.

// logBuffer keeps what an exporter logs, for a test to look for a line.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	t   *testing.T
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf.Write(p)
	b.mu.Unlock()
	return testWriter{b.t}.Write(p)
}

// lines returns the logged lines that hold every one of words.
func (b *logBuffer) lines(words ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		all := l != ""
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// runLogged runs the connector until idle, as runUntilIdle does, and
// returns what it logged.
func (e *env) runLogged(c *config.Connector, timeout time.Duration) *logBuffer {
	e.t.Helper()
	logs := &logBuffer{t: e.t}
	ex, err := exporter.New(c, exporter.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		UntilIdle: true, Version: "test", Metrics: e.metrics})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := ex.Run(ctx); err != nil {
		e.t.Fatal(err)
	}
	return logs
}

// ownStateBucket gives the connector a state bucket of its own, which a
// test may delete.
func (e *env) ownStateBucket(c *config.Connector) {
	c.State.Bucket = "state-" + e.stream
	e.state = c.State.Bucket
}

// A state bucket that keeps its entries in memory, or expires them, loses
// the export records jetlake resumes from: run refuses it and plan fails,
// each naming the bucket and the fix, and nothing is exported.
func TestAStateBucketThatCanLoseEntriesIsRefusedByRunAndPlan(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  jetstream.KeyValueConfig
		want string
	}{
		{"memory", jetstream.KeyValueConfig{Storage: jetstream.MemoryStorage}, "in memory"},
		{"ttl", jetstream.KeyValueConfig{Storage: jetstream.FileStorage, TTL: time.Hour}, "expire after 1h0m0s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"")
			c := e.connector()
			e.ownStateBucket(c)
			tt.cfg.Bucket = c.State.Bucket
			if _, err := e.js.CreateKeyValue(context.Background(), tt.cfg); err != nil {
				t.Fatal(err)
			}
			e.publish(10, 1)

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done, _ := e.run(ctx, c, true)
			err := <-done
			var ub *state.UnsafeBucketError
			if !errors.As(err, &ub) || !strings.Contains(err.Error(), c.State.Bucket) || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), "nats kv del "+c.State.Bucket) {
				t.Fatalf("run: %v; want the state bucket refused with %q and the fix", err, tt.want)
			}
			if got := e.read().objects; got != 0 {
				t.Errorf("%d objects written; want none", got)
			}

			r := plan.Run(ctx, c, plan.Options{Timeout: 5 * time.Second})
			var failed []string
			for _, ch := range r.Checks {
				if ch.Status == plan.Fail {
					failed = append(failed, ch.Msg)
				}
			}
			if len(failed) != 1 || !strings.Contains(failed[0], "state bucket "+c.State.Bucket) || !strings.Contains(failed[0], tt.want) ||
				!strings.Contains(failed[0], "nats kv del") {
				t.Fatalf("plan failed %q; want the state bucket, with %q and the fix", failed, tt.want)
			}
		})
	}
}

// An export record lost with the consumer (the record's key deleted, or
// the whole state bucket) after an export: the next run rebuilds the record
// from the objects in the lake, says so in one log line, and exports only
// what the lake lacks, whatever deliver_policy says: no sequence is written
// twice, none is skipped.
func TestALostExportRecordIsRebuiltFromTheLake(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{config.DeliverAll, config.DeliverNew} {
		for _, lost := range []string{"record", "bucket"} {
			t.Run(policy+"/"+lost, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 250\nmax_file_age = \"1s\"")
				c := e.connector()
				e.ownStateBucket(c)
				c.Streams[0].DeliverPolicy = policy
				e.runUntilIdle(c, time.Minute) // makes the consumer; with "new", at the stream's end
				exported := e.publish(2000, 5)
				e.runUntilIdle(c, time.Minute)

				ctx := context.Background()
				switch lost {
				case "record":
					if err := e.stateBucket(c).Purge(ctx, e.recordKey(c)); err != nil {
						t.Fatal(err)
					}
				case "bucket":
					if err := e.js.DeleteKeyValue(ctx, c.State.Bucket); err != nil {
						t.Fatal(err)
					}
				}
				e.deleteConsumer(c)
				last := e.publish(1000, 5)

				reg := prometheus.NewRegistry()
				e.metrics = metrics.New(reg)
				logs := e.runLogged(c, time.Minute)
				e.wantExactlyOnce(e.read(), last)
				e.verify(c)
				e.wantAllAcked()
				if got := logs.lines("rebuilt from the lake"); len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf("floor=%d", exported)) {
					t.Errorf("log lines of the rebuild %q; want one, with floor=%d", got, exported)
				}
				if got := logs.lines("created from the export record", fmt.Sprintf("record_floor=%d", exported)); len(got) != 1 {
					t.Errorf("log lines of the consumer made from the record with its floor %q; want one", got)
				}
				if got := metricSum(reg, "jetlake_messages_received_total", nil); got != 1000 {
					t.Errorf("received %v messages; want the 1000 the lake lacks", got)
				}
			})
		}
	}
}

// An export record forged with plain write access to the state bucket,
// of the right stream, with a floor at or below the stream's last
// sequence, is not believed past what the lake and the consumer show: with
// the consumer gone, no message is skipped, and a warning names the
// record's claim.
func TestAForgedExportRecordBelowTheLastSequenceSkipsNothing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		exported int    // messages exported before the record is forged
		more     int    // published after
		floor    uint64 // the forged record's
	}{
		{"never exported", 0, 15, 10},
		{"past the lake", 300, 200, 450},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"")
			c := e.connector()
			if tt.exported > 0 {
				e.publish(tt.exported, 3)
				e.runUntilIdle(c, time.Minute)
				e.deleteConsumer(c)
			}
			last := e.publish(tt.more, 3)
			if _, err := state.Open(context.Background(), e.js, c.State.Bucket, 1); err != nil {
				t.Fatal(err)
			}
			e.forgeRecord(c, tt.floor)

			reg := prometheus.NewRegistry()
			e.metrics = metrics.New(reg)
			logs := e.runLogged(c, time.Minute)
			e.wantExactlyOnce(e.read(), last)
			e.verify(c)
			e.wantAllAcked()
			if got := logs.lines("level=WARN", "the export record claims", fmt.Sprintf("record_floor=%d", tt.floor)); len(got) != 1 {
				t.Errorf("warnings of the forged record %q; want one with record_floor=%d", got, tt.floor)
			}
			if got := metricSum(reg, "jetlake_state_untrusted_total", map[string]string{"kind": "export_record"}); got != 1 {
				t.Errorf("state_untrusted_total{kind=export_record} %v; want 1", got)
			}
		})
	}
}

// The same for an Iceberg connector: the record lost with the consumer is
// rebuilt from the data files of the table's current snapshot, and the
// table holds every sequence once.
func TestALostExportRecordOfAnIcebergConnectorIsRebuiltFromTheTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"")
	catalog := e.icebergConnector("1h")
	c := e.connector()
	e.ownStateBucket(c)
	exported := e.publish(1000, 4)
	e.runUntilIdle(c, 2*time.Minute)
	if err := e.stateBucket(c).Purge(context.Background(), e.recordKey(c)); err != nil {
		t.Fatal(err)
	}
	e.deleteConsumer(c)
	last := e.publish(500, 4)

	logs := e.runLogged(c, 2*time.Minute)
	if problems := e.readTable(c, catalog).Check(last); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	e.verify(c)
	e.wantAllAcked()
	if got := logs.lines("rebuilt from the lake"); len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf("floor=%d", exported)) {
		t.Errorf("log lines of the rebuild %q; want one, with floor=%d", got, exported)
	}
}

// A consumer with filter subjects has a record that passes other
// subjects' sequences, which no object holds: a forged floor past what the
// lake shows is still found out by the messages of its own subject the
// stream holds there, and none of them is skipped.
func TestAForgedExportRecordOfAFilteredConsumerSkipsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"")
	c := e.connector()
	c.Streams[0].Subjects = []string{e.stream + ".s0"}
	e.publish(300, 3) // s0 holds sequences 1, 4, 7, ...
	e.runUntilIdle(c, time.Minute)
	// The record jetlake wrote passes 299 and 300, of other subjects,
	// which no object holds: it is believed.
	e.deleteConsumer(c)
	if got := e.runLogged(c, time.Minute).lines("rebuilt from the lake"); len(got) != 0 {
		t.Errorf("the record jetlake wrote was not believed: %q", got)
	}
	e.deleteConsumer(c)
	last := e.publish(200, 3)
	e.forgeRecord(c, 450)

	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	logs := e.runLogged(c, time.Minute)
	got := e.read()
	if len(got.dups) > 0 {
		t.Fatalf("%d duplicates, first: %s", len(got.dups), got.dups[0])
	}
	var missing []uint64
	for q := uint64(1); q <= last; q += 3 {
		if _, ok := got.bySeq[q]; !ok {
			missing = append(missing, q)
		}
	}
	if len(missing) > 0 || len(got.bySeq) != int(last+2)/3 {
		t.Fatalf("%d sequences exported, %d of s0's missing (first %v); want the %d of s0", len(got.bySeq), len(missing), missing[:min(1, len(missing))], (last+2)/3)
	}
	e.verify(c)
	if got := logs.lines("level=WARN", "the export record claims", "record_floor=450"); len(got) != 1 {
		t.Errorf("warnings of the forged record %q; want one", got)
	}
}
