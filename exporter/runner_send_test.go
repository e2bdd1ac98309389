package exporter

import (
	"context"
	"sync"
	"testing"
	"time"
)

// An uploader hands a stored batch's acks to a goroutine of their own and
// is free at once; the loop hears of the batch only once they are done.
// With no room for another such goroutine, the uploader acks itself.
func TestUploaderLeavesTheAcksToAnotherGoroutine(t *testing.T) {
	r := &runner{wires: wires{results: make(chan *result, 2)}}
	var wg sync.WaitGroup
	ackers := make(chan struct{}, 1)
	release := make(chan struct{})
	acked := func(res *result) func(context.Context) {
		return func(context.Context) {
			<-release
			res.status = jobConfirmed
		}
	}

	first := &result{}
	first.acks = acked(first)
	sent := make(chan struct{})
	go func() {
		r.send(context.Background(), first, &wg, ackers)
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the uploader waited for the acks")
	}
	select {
	case res := <-r.wires.results:
		t.Fatalf("result %+v sent before its acks", res)
	default:
	}

	// The one acking goroutine is busy: the next batch is acked by its
	// uploader.
	second := &result{}
	second.acks = acked(second)
	sent = make(chan struct{})
	go func() {
		r.send(context.Background(), second, &wg, ackers)
		close(sent)
	}()
	select {
	case <-sent:
		t.Fatal("the uploader did not ack itself with no acking goroutine free")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-sent
	wg.Wait()
	for range 2 {
		if res := <-r.wires.results; res.status != jobConfirmed || res.acks != nil {
			t.Errorf("result %+v sent before its acks were done", res)
		}
	}

	// A result without acks (a failed upload, a loss marker) goes at once.
	r.send(context.Background(), &result{}, &wg, ackers)
	if len(r.wires.results) != 1 {
		t.Error("a result without acks was not sent")
	}
}
