package exporter

import (
	"testing"
	"time"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/formats"
)

// TestBatchesOfOneBufferAreUploadedInOrder queues two batches of subject a
// and one of b: while a's first batch is being uploaded, b's goes next, and
// a's second only once the first is done.
func TestBatchesOfOneBufferAreUploadedInOrder(t *testing.T) {
	r, s := hotRunner(t)
	add := func(seq uint64, subject string) {
		rec := formats.Record{Stream: "S", Subject: subject, Sequence: seq, Time: time.Unix(0, 0), Data: []byte(`{}`)}
		if err := r.set.Add([]byte("0\x00"+subject), []byte(subject), &rec, ackRef("$JS.ACK.S.c.1.1.1.0.0"), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		s.held.add(seq)
	}
	add(1, "a")
	r.set.SealAll(buffer.ReasonCount)
	add(2, "a")
	add(3, "b")
	r.set.SealAll(buffer.ReasonCount)
	r.takeSealed()
	first := func() uint64 {
		i := r.nextJob()
		if i < 0 {
			return 0
		}
		return r.queue[i].batch.First
	}
	if got := first(); got != 1 {
		t.Fatalf("first job: batch %d, want 1", got)
	}
	j1 := r.queue[0]
	r.dispatched(0)
	if got := first(); got != 3 {
		t.Fatalf("while a's first batch uploads: batch %d next, want b's (3)", got)
	}
	j3 := r.queue[r.nextJob()]
	r.dispatched(r.nextJob())
	if got := first(); got != 0 {
		t.Fatalf("batch %d next while a's first batch uploads", got)
	}
	r.finish(&result{job: j3, stored: true})
	r.finish(&result{job: j1, stored: true})
	if got := first(); got != 2 {
		t.Fatalf("after a's first batch: batch %d next, want 2", got)
	}
	r.dispatched(r.nextJob())
	if len(r.queue) != 0 || len(r.uploading) != 1 {
		t.Fatalf("queue %d, uploading %v", len(r.queue), r.uploading)
	}
}
