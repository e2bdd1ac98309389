package exporter

import (
	"context"
	"testing"
	"time"
)

// A sealed batch that waits in the queue, behind a retrying upload of its
// key, is kept in progress like the one being uploaded, and its uploader
// starts from the last InProgress, not from when the batch opened.
func TestQueuedBatchesAreKeptInProgressWhileTheyWait(t *testing.T) {
	e := testExporter(t, &MemStore{})
	const ackWait = 30 * time.Second
	// Opened longer ago than AckWait: only the InProgress sent while it
	// waited keeps it from being abandoned.
	opened := time.Now().Add(-40 * time.Second)
	uploading, _ := sealedJob(t, e, 2, opened, ackWait)
	queued, msgs := sealedJob(t, e, 3, opened, ackWait)
	queued.set = uploading.set // one buffer key: uploaded one after the other
	r := &runner{e: e, uploading: map[bufferKey]int{}, jobs: make(chan *job)}
	r.enqueue(uploading)
	r.enqueue(queued)
	jobs, next, idx := r.offer()
	if jobs == nil || next != uploading {
		t.Fatal("the first batch is not offered to the uploaders")
	}
	r.dispatched(idx)
	if _, next, _ := r.offer(); next != nil {
		t.Fatal("the second batch of the key was offered while the first uploads")
	}

	now := time.Now()
	r.keepQueuedInProgress(now)
	for _, m := range msgs {
		if _, _, inProgress := m.snapshot(); inProgress != 1 {
			t.Fatalf("queued message %d: %d InProgress, want 1", m.seq, inProgress)
		}
	}
	if !queued.progress.Equal(now) {
		t.Fatalf("progress %v after InProgress at %v", queued.progress, now)
	}
	// Not again before another third of AckWait.
	r.keepQueuedInProgress(now.Add(ackWait / 4))
	if _, _, inProgress := msgs[0].snapshot(); inProgress != 1 {
		t.Fatalf("%d InProgress a quarter of AckWait later, want still 1", inProgress)
	}

	// Its upload, long after the batch opened, starts from that InProgress:
	// the batch is stored and acked, not abandoned.
	res := e.upload(context.Background(), queued)
	if res.err != nil || !res.confirmed {
		t.Fatalf("upload of the batch kept in progress: %v (confirmed %v)", res.err, res.confirmed)
	}
}
