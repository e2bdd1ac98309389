package exporter

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A sealed batch that waits in the queue, behind a retrying upload of its
// key, is kept in progress like the one being uploaded, and its uploader
// starts from the last InProgress, not from when the batch opened.
func TestQueuedBatchesAreKeptInProgressWhileTheyWait(t *testing.T) {
	e := testExporter(t, &MemStore{})
	const ackWait = 30 * time.Second
	// Opened two thirds of AckWait ago: due for InProgress.
	opened := time.Now().Add(-20 * time.Second)
	uploading, _ := sealedJob(t, e, 2, opened, ackWait)
	queued, msgs := sealedJob(t, e, 3, opened, ackWait)
	queued.set = uploading.set // one buffer key: uploaded one after the other
	r := &runner{session: e, up: uploads{uploading: map[bufferKey]int{}}, wires: wires{jobs: make(chan *job), back: make(chan func(), 1), stopping: make(chan struct{})}}
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
	if !queued.progress.Equal(now) {
		t.Fatalf("progress %v after InProgress at %v", queued.progress, now)
	}
	// The server answered: the batch counts as confirmed from then. Each
	// message got one InProgress, the last one with the request for the
	// answer.
	(<-r.wires.back)()
	for _, m := range msgs {
		if _, _, inProgress := m.snapshot(); inProgress != 1 {
			t.Fatalf("queued message %d: %d InProgress, want 1", m.seq, inProgress)
		}
	}
	if got := queued.confirmed.Load(); got != now.UnixNano() {
		t.Fatalf("confirmed %v after an answered InProgress at %v", time.Unix(0, got), now)
	}
	// Not again before another third of AckWait.
	r.keepQueuedInProgress(now.Add(ackWait / 4))
	if _, _, inProgress := msgs[0].snapshot(); inProgress != 1 {
		t.Fatalf("%d InProgress a quarter of AckWait later, want still 1", inProgress)
	}

	// Its upload starts from that InProgress: the batch is stored and
	// acked with no InProgress of the uploader's own.
	res := upload(context.Background(), e, queued)
	if res.err != nil || res.status != jobConfirmed {
		t.Fatalf("upload of the batch kept in progress: %v (confirmed %v)", res.err, res.status == jobConfirmed)
	}
	if _, _, inProgress := msgs[0].snapshot(); inProgress != 1 {
		t.Fatalf("%d InProgress after the upload, want still 1", inProgress)
	}
}

// A batch whose InProgress the server never answered (its link to NATS
// froze, say) is not stored once its AckWait may have passed: another
// instance may hold its messages by then. Stored anyway, it would double
// them.
func TestABatchWhoseInProgressWentUnansweredIsNotStoredLate(t *testing.T) {
	store := &MemStore{}
	e := testExporter(t, store)
	const ackWait = 30 * time.Second
	opened := time.Now().Add(-20 * time.Second)
	queued, msgs := sealedJob(t, e, 3, opened, ackWait)
	r := &runner{session: e, up: uploads{uploading: map[bufferKey]int{}}, wires: wires{jobs: make(chan *job), back: make(chan func(), 1), stopping: make(chan struct{})}}
	r.enqueue(queued)
	e.acks.(*fakeAcker).silent = true
	r.keepQueuedInProgress(time.Now())
	if _, _, inProgress := msgs[0].snapshot(); inProgress != 1 {
		t.Fatalf("%d InProgress sent, want 1", inProgress)
	}
	(<-r.wires.back)()
	if got := queued.confirmed.Load(); got != opened.UnixNano() {
		t.Fatalf("confirmed moved to %v without an answer", time.Unix(0, got))
	}
	// Eight seconds later the messages may be redelivered (AckWait, less a
	// tenth for the way): no InProgress is sent for them any more, since
	// an answer would prove nothing, and the upload gives them up.
	e.acks.(*fakeAcker).silent = false
	queued.confirmed.Store(opened.Add(-8 * time.Second).UnixNano())
	r.keepQueuedInProgress(time.Now().Add(ackWait))
	if _, _, inProgress := msgs[0].snapshot(); inProgress != 1 {
		t.Fatalf("%d InProgress sent, want still 1", inProgress)
	}
	res := upload(context.Background(), e, queued)
	if !errors.Is(res.err, ErrAbandoned) || res.status.isStored() || len(store.keys) != 0 {
		t.Fatalf("upload: %v, stored %v %q; want abandoned and nothing stored", res.err, res.status.isStored(), store.keys)
	}
	for _, m := range msgs {
		if acks, doubles, _ := m.snapshot(); acks+doubles != 0 {
			t.Fatalf("message %d acked %d times", m.seq, acks+doubles)
		}
	}
}

// The uploader keeps its batch in progress with InProgress the server
// answers; once the server stops answering, the batch is given up before
// its AckWait could pass, not stored late.
func TestAnUploadStopsWhenInProgressGoesUnanswered(t *testing.T) {
	store := &MemStore{n: 1000, err: errors.New("connection refused")}
	e := testExporter(t, store)
	const ackWait = 3 * time.Second
	j, _ := sealedJob(t, e, 2, time.Now(), ackWait)
	e.acks.(*fakeAcker).silent = true
	start := time.Now()
	res := upload(context.Background(), e, j)
	if !errors.Is(res.err, ErrAbandoned) || res.status.isStored() {
		t.Fatalf("upload: %v, stored %v; want abandoned", res.err, res.status.isStored())
	}
	// The slack is the last attempt's return under make test's load with
	// the race detector (2.91 s seen against 2.8 s); it stays below
	// AckWait.
	if took := time.Since(start); took > ackWait-ackWait/10+250*time.Millisecond {
		t.Fatalf("gave up after %s, past the time the messages were surely held (%s)", took, ackWait-ackWait/10)
	}
}

// upload_concurrency bounds the large uploads in flight; small ones go
// ahead of waiting large ones, up to smallUploads times as many in all.
func TestLargeUploadsAreBoundedAndSmallOnesGoAhead(t *testing.T) {
	e := testExporter(t, &MemStore{})
	e.cfg.S3.UploadConcurrency = 1
	r := &runner{session: e, up: uploads{uploading: map[bufferKey]int{}}, wires: wires{jobs: make(chan *job), back: make(chan func(), 1), stopping: make(chan struct{})}}
	add := func(n int, size int64) *job {
		j, _ := sealedJob(t, e, n, time.Now(), time.Minute)
		j.size = size
		r.enqueue(j)
		return j
	}
	large1, large2 := add(1, 8<<20), add(2, 8<<20)
	small := add(3, 4<<10)
	take := func() *job {
		t.Helper()
		_, next, idx := r.offer()
		if next != nil {
			r.dispatched(idx)
		}
		return next
	}
	if got := take(); got != large1 {
		t.Fatal("the first large upload is not offered first")
	}
	if got := take(); got != small {
		t.Fatal("with upload_concurrency large uploads in flight, the small one is not offered ahead of the next large one")
	}
	if got := take(); got != nil {
		t.Fatal("a second large upload is offered while upload_concurrency are in flight")
	}
	if err := r.finish(context.Background(), &result{job: large1, err: errors.New("failed")}); err != nil {
		t.Fatal(err)
	}
	if got := take(); got != large2 {
		t.Fatal("the next large upload is not offered once one ended")
	}
	if uploaders(e.cfg.S3.UploadConcurrency) != smallUploads {
		t.Fatalf("%d uploaders", uploaders(e.cfg.S3.UploadConcurrency))
	}
}
