package exporter_test

import (
	"context"
	"fmt"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// heapAllocs returns the bytes allocated on the heap so far by the test
// process, exporter included. The tests that measure it do not run in
// parallel (no t.Parallel): the package's parallel tests run only once
// they are done.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// maxRunAllocs bounds what an export of a few hundred messages may
// allocate in all. Anything that took memory per removed sequence would
// take gigabytes for the removals below.
const maxRunAllocs = 32 << 20

// A purge that moves the stream's first sequence 300 million ahead is one
// range: one loss marker, and what the run allocates does not grow with
// the sequences removed.
func TestAPurgeOf300MillionSequencesIsOneMarker(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	c := e.connector()
	e.publish(400, 4)
	e.runUntilIdle(c, time.Minute)
	e.publish(100, 4)
	e.purge(jetstream.WithPurgeSequence(300_000_000))
	last := e.publish(200, 4)
	if last != 300_000_199 {
		t.Fatalf("last sequence %d, want 300000199", last)
	}
	before := heapAllocs()
	e.runUntilIdle(c, time.Minute)
	allocs := heapAllocs() - before
	t.Logf("the run allocated %d KiB", allocs>>10)
	if allocs > maxRunAllocs {
		t.Errorf("the run allocated %d MiB, want under %d MiB", allocs>>20, maxRunAllocs>>20)
	}
	ms := e.markers()
	if len(ms) != 1 || ms[0].FirstSeq != 401 || ms[0].LastSeq != 299_999_999 || ms[0].Count != 299_999_599 || len(ms[0].Ranges) != 0 {
		t.Fatalf("markers %+v, want one of 401-299999999", ms)
	}
	e.wantEachOnce(last)
	e.verify(c)
	e.wantAllAcked()
}

// A stream with a million interior deletes (max_msgs_per_subject = 1 over
// a hundred subjects, a few other subjects' messages kept in between) is
// handled in ranges: a marker names the deleted ranges, and the run
// allocates no memory per deleted sequence.
func TestAMillionInteriorDeletesAreHandledAsRanges(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 1000
max_file_age = "1s"`)
	c := e.connector()
	e.streamConfig(func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 1 })
	e.runUntilIdle(c, time.Minute) // creates the consumer: everything after is in scope
	const (
		rounds  = 10_000
		hot     = 100 // subjects
		keepers = 5   // a kept message every rounds/keepers rounds
	)
	// Round r publishes a message on every hot subject, after a kept one
	// every rounds/keepers rounds.
	subjects := make([]string, 0, rounds*hot+keepers)
	for r := range rounds {
		if r%(rounds/keepers) == 0 {
			subjects = append(subjects, fmt.Sprintf("%s.keep.%d", e.stream, r))
		}
		for s := range hot {
			subjects = append(subjects, fmt.Sprintf("%s.hot.%d", e.stream, s))
		}
	}
	last := e.publishEach(len(subjects), func(i int) (string, []byte) { return subjects[i], []byte(`{"v":1}`) })
	st, err := e.js.Stream(context.Background(), e.stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.NumDeleted < 990_000 || info.State.Msgs != hot+keepers {
		t.Fatalf("stream holds %d messages with %d interior deletes", info.State.Msgs, info.State.NumDeleted)
	}

	before := heapAllocs()
	e.runUntilIdle(c, 2*time.Minute)
	allocs := heapAllocs() - before
	t.Logf("the run allocated %d KiB", allocs>>10)
	if allocs > maxRunAllocs {
		t.Errorf("the run allocated %d MiB, want under %d MiB", allocs>>20, maxRunAllocs>>20)
	}
	ms := e.markers()
	if len(ms) == 0 || len(ms) > 2 {
		t.Fatalf("%d markers, want one or two", len(ms))
	}
	var named uint64
	for _, m := range ms {
		named += m.Count
	}
	if want := last - hot - keepers; named != want {
		t.Errorf("markers name %d sequences, want %d", named, want)
	}
	e.wantEachOnce(last)
	e.wantAllAcked()
}
