package exporter_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/lossmarker"
)

// removal is a way a stream removes messages: remove publishes the batch
// of messages it removes from (with publish) and removes them.
type removal struct {
	name   string
	remove func(t *testing.T, e *env, publish func() uint64)
}

// streamConfig changes the test stream's configuration.
func (e *env) streamConfig(change func(*jetstream.StreamConfig)) {
	e.t.Helper()
	ctx := context.Background()
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	change(&cfg)
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		e.t.Fatal(err)
	}
}

// purge purges the test stream.
func (e *env) purge(opts ...jetstream.StreamPurgeOpt) {
	e.t.Helper()
	ctx := context.Background()
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := st.Purge(ctx, opts...); err != nil {
		e.t.Fatal(err)
	}
}

// removals are every way a stream removes messages.
var removals = []removal{
	{"max_msgs", func(t *testing.T, e *env, publish func() uint64) {
		e.streamConfig(func(c *jetstream.StreamConfig) { c.MaxMsgs = 300 })
		publish()
		e.streamConfig(func(c *jetstream.StreamConfig) { c.MaxMsgs = -1 })
	}},
	{"max_bytes", func(t *testing.T, e *env, publish func() uint64) {
		e.streamConfig(func(c *jetstream.StreamConfig) { c.MaxBytes = 64 << 10 })
		publish()
		e.streamConfig(func(c *jetstream.StreamConfig) { c.MaxBytes = -1 })
	}},
	{"max_age", func(t *testing.T, e *env, publish func() uint64) {
		e.streamConfig(func(c *jetstream.StreamConfig) { c.MaxAge, c.Duplicates = time.Second, time.Second })
		publish()
		ctx := context.Background()
		waitFor(t, 30*time.Second, "messages to age out", func() bool {
			st, err := e.js.Stream(ctx, e.stream)
			if err != nil {
				t.Fatal(err)
			}
			info, err := st.Info(ctx)
			return err == nil && info.State.Msgs == 0
		})
		e.streamConfig(func(c *jetstream.StreamConfig) { c.MaxAge = 0 })
	}},
	{"max_msgs_per_subject", func(t *testing.T, e *env, publish func() uint64) {
		e.streamConfig(func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 1 })
		publish()
		e.streamConfig(func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = -1 })
	}},
	{"purge the stream", func(t *testing.T, e *env, publish func() uint64) {
		publish()
		e.purge()
	}},
	{"purge a subject", func(t *testing.T, e *env, publish func() uint64) {
		publish()
		e.purge(jetstream.WithPurgeSubject(e.stream + ".s1"))
	}},
	{"purge up to a sequence", func(t *testing.T, e *env, publish func() uint64) {
		last := publish()
		e.purge(jetstream.WithPurgeSequence(last - 100))
	}},
	{"purge past the last sequence", func(t *testing.T, e *env, publish func() uint64) {
		publish()
		e.purge(jetstream.WithPurgeSequence(300_000_000))
	}},
	{"delete messages", func(t *testing.T, e *env, publish func() uint64) {
		last := publish()
		ctx := context.Background()
		st, err := e.js.Stream(ctx, e.stream)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []uint64{last - 500, last - 499, last - 300, last} {
			if err := st.DeleteMsg(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}},
}

// TestEveryRemovalGetsAMarkerWhileStopped exports 400 messages, stops,
// lets the stream remove messages in each way while jetlake is stopped,
// publishes more and exports again: every sequence is in exactly one
// object or loss marker.
func TestEveryRemovalGetsAMarkerWhileStopped(t *testing.T) {
	t.Parallel()
	for _, rm := range removals {
		t.Run(rm.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
			c := e.connector()
			e.publish(400, 4)
			e.runUntilIdle(c, time.Minute)
			rm.remove(t, e, func() uint64 { return e.publish(1000, 4) })
			last := e.publish(200, 4)
			e.runUntilIdle(c, time.Minute)
			e.wantEachOnce(last)
			e.verify(c)
			e.wantAllAcked()
		})
	}
}

// TestEveryRemovalGetsAMarkerWhileRunning does the same while jetlake runs
// and holds messages in its buffers: the consumer is paused while the
// stream removes messages it has not delivered yet, as when jetlake lags.
func TestEveryRemovalGetsAMarkerWhileRunning(t *testing.T) {
	t.Parallel()
	for _, rm := range removals {
		t.Run(rm.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 1000
max_file_age = "3s"`)
			c := e.connector()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rctx, stop := context.WithCancel(ctx)
			done, _ := e.run(rctx, c, false)
			stopped := false
			defer func() {
				if !stopped {
					stop()
					<-done
				}
			}()
			waitFor(t, 30*time.Second, "the consumer", func() bool { return e.consumerInfo().NumPending == 0 })
			e.publish(400, 4)
			// Delivered and buffered, not yet stored: in flight.
			waitFor(t, 30*time.Second, "the messages to be delivered", func() bool { return e.consumerInfo().NumAckPending == 400 })
			if _, err := e.js.PauseConsumer(ctx, e.stream, "c"+e.stream, time.Now().Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			rm.remove(t, e, func() uint64 { return e.publish(1000, 4) })
			if _, err := e.js.ResumeConsumer(ctx, e.stream, "c"+e.stream); err != nil {
				t.Fatal(err)
			}
			last := e.publish(200, 4)
			waitFor(t, time.Minute, "every sequence in an object or marker", func() bool { return e.covered(last) })
			stop()
			stopped = true
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			e.wantEachOnce(last)
			e.verify(c)
			e.wantAllAcked()
		})
	}
}

// markers reads every loss marker of the test's bucket.
func (e *env) markers() []*lossmarker.Marker {
	e.t.Helper()
	ctx := context.Background()
	var out []*lossmarker.Marker
	for obj := range e.mc.ListObjects(ctx, e.bucket, minio.ListObjectsOptions{Recursive: true, Prefix: "raw/_jetlake/lost/"}) {
		if obj.Err != nil {
			e.t.Fatal(obj.Err)
		}
		m, err := lossmarker.Parse(e.get(ctx, obj.Key))
		if err != nil {
			e.t.Fatalf("%s: %v", obj.Key, err)
		}
		out = append(out, m)
	}
	return out
}

// holders returns, sorted, the ranges of sequences the data objects and
// loss markers hold, each with what holds it.
func (e *env) holders() []held {
	got := e.read()
	var out []held
	for q, key := range got.bySeq {
		out = append(out, held{q, q, key})
	}
	for _, d := range got.dups {
		out = append(out, held{0, 0, d})
	}
	for _, m := range e.markers() {
		for _, r := range m.Runs() {
			out = append(out, held{r.First, r.Last, fmt.Sprintf("marker %d-%d", m.FirstSeq, m.LastSeq)})
		}
	}
	slices.SortFunc(out, func(a, b held) int { return cmp.Compare(a.first, b.first) })
	return out
}

type held struct {
	first, last uint64
	by          string
}

// coverage checks, in ranges, that sequences 1..last are each in exactly
// one data object or loss marker, and returns what is wrong.
func coverage(hs []held, last uint64) []string {
	var problems []string
	next := uint64(1)
	for _, h := range hs {
		switch {
		case h.first == 0:
			problems = append(problems, "duplicate: "+h.by)
		case h.first < next:
			problems = append(problems, fmt.Sprintf("sequences %d-%d of %s are held twice", h.first, min(h.last, next-1), h.by))
		case h.first > next:
			problems = append(problems, fmt.Sprintf("sequences %d-%d are in nothing", next, h.first-1))
		}
		next = max(next, h.last+1)
	}
	if next <= last {
		problems = append(problems, fmt.Sprintf("sequences %d-%d are in nothing", next, last))
	}
	return problems
}

// covered reports whether sequences 1..last are each in an object or
// marker.
func (e *env) covered(last uint64) bool {
	return len(coverage(e.holders(), last)) == 0
}

// wantEachOnce requires every sequence 1..last in exactly one data object
// or loss marker, read from the bucket independently of verify.
func (e *env) wantEachOnce(last uint64) {
	e.t.Helper()
	if problems := coverage(e.holders(), last); len(problems) > 0 {
		e.t.Fatalf("%d problems:\n%s", len(problems), strings.Join(problems[:min(len(problems), 20)], "\n"))
	}
}

// A filtered consumer can not tell which removed sequences matched its
// filter. When the stream's first sequence moves past what it exported, a
// marker names the whole removed range, which may hold other subjects'
// sequences too; every message of its subjects is still in exactly one
// object or marker, and a run with nothing removed writes no marker.
func TestAFilteredConsumerNamesARemovedHeadRange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	body, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	filtered := strings.Replace(string(body), fmt.Sprintf(`subjects = ["%s.>"]`, e.stream),
		fmt.Sprintf(`subjects = ["%[1]s.s0", "%[1]s.s1"]`, e.stream), 1)
	if err := os.WriteFile(e.file, []byte(filtered), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.connector()
	e.publish(400, 4)
	e.runUntilIdle(c, time.Minute)
	if ms := e.markers(); len(ms) != 0 {
		t.Fatalf("%d markers after a run with nothing removed", len(ms))
	}
	e.publish(1000, 4)
	e.purge(jetstream.WithPurgeSequence(1001))
	last := e.publish(200, 4)
	e.runUntilIdle(c, time.Minute)

	ms := e.markers()
	if len(ms) != 1 || ms[0].LastSeq != 1000 || ms[0].FirstSeq > 401 || !strings.Contains(ms[0].Error, "other subjects") {
		t.Fatalf("markers %+v, want one up to 1000 that says it may hold other subjects", ms)
	}
	// Every sequence of s0 and s1 (published round-robin over s0-s3) is
	// in exactly one object or marker.
	got := e.read()
	for q := uint64(1); q <= last; q++ {
		inScope := (q-1)%4 < 2
		_, inObject := got.bySeq[q]
		inMarker := q >= ms[0].FirstSeq && q <= ms[0].LastSeq
		switch {
		case inObject && inMarker:
			t.Fatalf("sequence %d is in an object and in the marker", q)
		case inScope && !inObject && !inMarker:
			t.Fatalf("sequence %d of the consumer's subjects is in nothing", q)
		case !inScope && inObject:
			t.Fatalf("sequence %d of another subject was exported", q)
		}
	}
	e.verify(c)
	e.wantAllAcked()
}
