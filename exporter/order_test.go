package exporter

import (
	"context"
	"testing"
	"time"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
)

// TestBatchesOfOneBufferAreUploadedInOrder queues two batches of subject a
// and one of b: while a's first batch is being uploaded, b's goes next, and
// a's second only once the first is done.
func TestBatchesOfOneBufferAreUploadedInOrder(t *testing.T) {
	r, s := hotRunner(t)
	add := func(seq uint64, subject string) {
		rec := formats.Record{Stream: "S", Subject: subject, Sequence: seq, Time: time.Unix(0, 0), Data: []byte(`{}`)}
		if err := r.set.Add([]byte("0\x00"+subject), []byte(subject), &rec, seq, rec.Time, jsclient.AckRef("$JS.ACK.S.c.1.1.1.0.0"), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		s.book.Deliver(seq, 0, false)
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
		return r.up.queue[i].batch.First
	}
	if got := first(); got != 1 {
		t.Fatalf("first job: batch %d, want 1", got)
	}
	j1 := r.up.queue[0]
	r.dispatched(0)
	if got := first(); got != 3 {
		t.Fatalf("while a's first batch uploads: batch %d next, want b's (3)", got)
	}
	j3 := r.up.queue[r.nextJob()]
	r.dispatched(r.nextJob())
	if got := first(); got != 0 {
		t.Fatalf("batch %d next while a's first batch uploads", got)
	}
	r.finish(context.Background(), &result{job: j3, status: jobStored})
	r.finish(context.Background(), &result{job: j1, status: jobStored})
	if got := first(); got != 2 {
		t.Fatalf("after a's first batch: batch %d next, want 2", got)
	}
	r.dispatched(r.nextJob())
	if len(r.up.queue) != 0 || len(r.up.uploading) != 1 {
		t.Fatalf("queue %d, uploading %v", len(r.up.queue), r.up.uploading)
	}
}

// TestAMessageOfAConfirmedBatchThatComesBackIsAckedNotWrittenAgain covers
// acks lost in a consumer leader change: the server confirmed the batch's
// last ack, yet an earlier message comes back.
func TestAMessageOfAConfirmedBatchThatComesBackIsAckedNotWrittenAgain(t *testing.T) {
	r, _ := hotRunner(t)
	j, msgs, seqs := uploadingBatch(t, r)
	r.finish(context.Background(), &result{job: j, status: jobConfirmed, intentKey: "i", seqs: seqs})

	back := &fakeMsg{seq: 2, data: msgs[1].data, reply: "$JS.ACK.S.c.2.2.9.1764399600123456789.0"}
	r.add(context.Background(), delivery{msg: back})
	if acks, _, _ := back.snapshot(); acks != 1 {
		t.Fatalf("the message that came back got %d acks, want 1", acks)
	}
	if r.set.Open() != 0 || len(r.up.queue) != 0 {
		t.Fatalf("the message that came back was buffered again: %d open, %d queued", r.set.Open(), len(r.up.queue))
	}
	// A redelivered message of no stored batch is exported as usual.
	other := &fakeMsg{seq: 4, data: msgs[0].data, reply: "$JS.ACK.S.c.2.4.10.1764399600123456789.0"}
	r.add(context.Background(), delivery{msg: other})
	if r.set.Open() != 1 {
		t.Fatalf("a redelivered message of no stored batch was not buffered")
	}
}

// TestAMessageOfABatchGivenUpWaitsForTheStore covers an upload attempt that
// timed out but stored the object: when the batch's messages come back
// they wait until the store says so, and are then acked, not written again.
func TestAMessageOfABatchGivenUpWaitsForTheStore(t *testing.T) {
	r, _ := hotRunner(t)
	j, msgs, seqs := uploadingBatch(t, r)
	const key = "p/s.a/00000000000000000001-00000000000000000003.jsonl"
	r.finish(context.Background(), &result{job: j, key: key, err: ErrAbandoned, intentKey: "i", seqs: seqs})

	back := &fakeMsg{seq: 2, data: msgs[1].data, reply: "$JS.ACK.S.c.2.2.9.1764399600123456789.0"}
	r.add(context.Background(), delivery{msg: back})
	if r.set.Open() != 0 {
		t.Fatal("the message was buffered again before the store was asked")
	}
	r.store.(*MemStore).preset(key, map[string]string{objstore.MetaIntent: j.intentID})
	startChores(r, "resolve", time.Now().Add(time.Hour))
	settle(r)
	if acks, _, _ := back.snapshot(); acks != 1 || r.set.Open() != 0 {
		t.Fatalf("after the store said it holds the object: %d acks, %d open buffers; want 1 ack, none", acks, r.set.Open())
	}
}

// uploadingBatch buffers three messages, seals their batch and hands it to
// an uploader. It returns the job, the messages and their encoded
// sequences.
func uploadingBatch(t *testing.T, r *runner) (*job, []*fakeMsg, []byte) {
	t.Helper()
	msgs := fakeMsgs(3)
	for _, m := range msgs {
		r.add(context.Background(), delivery{msg: m})
	}
	r.set.SealAll(buffer.ReasonCount)
	r.takeSealed()
	j := r.up.queue[0]
	r.dispatched(0)
	seqs, err := batchSeqs(j.batch).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return j, msgs, seqs
}
