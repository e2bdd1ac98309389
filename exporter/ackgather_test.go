package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
)

// orderAcker records what is sent to reply subjects, in order; requests to
// a subject in fail get an error.
type orderAcker struct {
	mu   sync.Mutex
	sent []string // "pub SUBJ" or "req SUBJ"
	fail map[string]bool
}

func (a *orderAcker) Publish(subj string, _ []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sent = append(a.sent, "pub "+subj)
	return nil
}

func (a *orderAcker) RequestWithContext(_ context.Context, subj string, _ []byte) (*nats.Msg, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sent = append(a.sent, "req "+subj)
	if a.fail[subj] {
		return nil, errors.New("no responders")
	}
	return &nats.Msg{}, nil
}

func (a *orderAcker) log() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.sent)
}

// gatherResult returns the result of a stored batch of n messages of
// stream s, starting at sequence first, owned until ackBy.
func gatherResult(s *streamWriter, first uint64, n int, ackBy time.Time) *result {
	b := &msgBatch{First: first, Last: first + uint64(n) - 1}
	for i := range n {
		seq := first + uint64(i)
		b.Items = append(b.Items, buffer.Item[jsclient.AckRef]{Seq: seq, Handle: jsclient.AckRef(fmt.Sprintf("%s.%d", s.cfg.Stream, seq))})
	}
	res := &result{job: &job{stream: s, batch: b}, key: fmt.Sprintf("%s/%d", s.cfg.Stream, first), ackBy: ackBy}
	res.acks = func(context.Context) { panic("a gathered result was acked on its own") }
	return res
}

func TestAckGathererAcksABurstWithOneConfirmationPerConsumer(t *testing.T) {
	a, b := &streamWriter{}, &streamWriter{}
	a.cfg.Stream, b.cfg.Stream = "A", "B"
	acker := &orderAcker{fail: map[string]bool{"B.31": true}}
	e := &session{acks: acker, Exporter: &Exporter{log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	in, out := make(chan *result, 8), make(chan *result, 8)
	g := &ackGatherer{e: e, in: in, out: out}
	done := make(chan struct{})
	go func() { g.run(context.Background()); close(done) }()

	ackBy := time.Now().Add(time.Minute)
	burst := []*result{
		gatherResult(a, 1, 3, ackBy),
		gatherResult(b, 30, 2, ackBy),
		gatherResult(a, 10, 2, ackBy),
	}
	start := time.Now()
	for _, res := range burst {
		in <- res
	}
	var got []*result
	for range burst {
		select {
		case res := <-out:
			got = append(got, res)
		case <-time.After(10 * time.Second):
			t.Fatal("the burst was never acked")
		}
	}
	if waited := time.Since(start); waited < ackGatherWindow/2 {
		t.Errorf("the burst went out after %v, before its window", waited)
	}
	if !slices.Equal(got, burst) {
		t.Error("results came out of the order they went in")
	}

	// A's five messages in order, one confirmation at the end; B's last ack
	// is confirmed (three attempts) and fails.
	want := []string{"pub A.1", "pub A.2", "pub A.3", "pub A.10", "req A.11", "pub B.30", "req B.31", "req B.31", "req B.31"}
	if log := acker.log(); !slices.Equal(log, want) {
		t.Errorf("sent\n%s\nwant\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	for _, res := range got {
		if res.acks != nil {
			t.Errorf("%s: acks left to run", res.key)
		}
		if want := res.job.stream == a; (res.status == jobConfirmed) != want {
			t.Errorf("%s: confirmed %v, want %v", res.key, res.status == jobConfirmed, want)
		}
	}

	// What is held when the input closes goes out at once.
	acker.mu.Lock()
	acker.fail = nil
	acker.mu.Unlock()
	last := gatherResult(a, 20, 1, ackBy)
	in <- last
	close(in)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the gatherer did not end")
	}
	if res := <-out; res != last || res.status != jobConfirmed {
		t.Errorf("the result held at the end was not acked: %+v", res)
	}
}

func TestOnlySmallBatchesWellWithinAckWaitAreGathered(t *testing.T) {
	s := &streamWriter{}
	s.cfg.Stream = "S"
	now := time.Now()
	for _, tc := range []struct {
		name     string
		messages int
		ackBy    time.Time
		want     bool
	}{
		{"small", 10, now.Add(time.Minute), true},
		{"largest gathered", ackGatherMessages, now.Add(time.Minute), true},
		{"large", ackGatherMessages + 1, now.Add(time.Minute), false},
		{"near AckWait", 10, now.Add(ackGatherMargin), false},
	} {
		if got := gatherResult(s, 1, tc.messages, tc.ackBy).gatherable(now); got != tc.want {
			t.Errorf("%s: gatherable %v, want %v", tc.name, got, tc.want)
		}
	}
	if (&result{}).gatherable(now) {
		t.Error("a result without acks is gatherable")
	}
}

// A stored small batch goes to the gatherer, and the loop hears at once
// that its upload is over: the next batch of its buffer key may go while
// the acks wait.
func TestGatheredBatchFreesItsKeyAtOnce(t *testing.T) {
	s := &streamWriter{}
	s.cfg.Stream = "S"
	r := &runner{
		session: &session{Exporter: &Exporter{cfg: &config.Connector{S3: config.S3{UploadConcurrency: 4}}}},
		wires:   wires{results: make(chan *result, 2), gather: make(chan *result, 1)}, up: uploads{uploading: map[bufferKey]int{}},
	}
	res := gatherResult(s, 1, 10, time.Now().Add(time.Minute))
	j := res.job
	j.uploading, r.up.uploading[j.key()], r.up.inflight = true, 1, 1
	next := gatherResult(s, 11, 10, time.Now().Add(time.Minute)).job
	r.up.queue = []*job{next}
	if r.nextJob() != -1 {
		t.Fatal("the next batch of a key may go while the one before uploads")
	}

	var wg sync.WaitGroup
	r.send(context.Background(), res, &wg, make(chan struct{}, 1))
	if got := <-r.wires.gather; got != res {
		t.Fatal("the result did not go to the gatherer")
	}
	notice := <-r.wires.results
	if !notice.notice || notice.job != j {
		t.Fatalf("want a notice of the job, got %+v", notice)
	}
	if err := r.finish(context.Background(), notice); err != nil {
		t.Fatal(err)
	}
	if r.nextJob() != 0 {
		t.Error("the next batch of the key waits after the notice")
	}
	if r.up.inflight != 1 {
		t.Errorf("the notice ended the job: %d in flight", r.up.inflight)
	}
}
