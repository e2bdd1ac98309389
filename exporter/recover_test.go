package exporter

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// The state a crash leaves behind at each step of the commit path, and what
// recovery must make of it. Crashing before the intent leaves nothing, so
// recovery has nothing to do and the messages are simply redelivered.
func TestRecoveryAfterACrashAtEachCommitStep(t *testing.T) {
	created := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	const key = "raw/S/s.a/2026-11-29/07/00000000000000000010-00000000000000000012.jsonl"
	tests := []struct {
		point         string
		object        map[string]string // metadata of the object at key; nil: no object
		streamCreated time.Time
		wantCommitted bool // redelivered messages are acked, not written
		wantAwait     bool // unresolved until its writer must have given up
		wantIntent    bool // the intent is still there after recovery
	}{
		{point: "before-upload", streamCreated: created, wantAwait: true, wantIntent: true},
		{point: "during-upload (the PUT never landed)", streamCreated: created, wantAwait: true, wantIntent: true},
		{point: "after-upload", object: map[string]string{objstore.MetaIntent: "I1", objstore.MetaFirstSeq: "10", objstore.MetaLastSeq: "12", objstore.MetaCount: "3"}, streamCreated: created, wantCommitted: true, wantIntent: true},
		{point: "after-acks", object: map[string]string{objstore.MetaIntent: "I1", objstore.MetaFirstSeq: "10", objstore.MetaLastSeq: "12", objstore.MetaCount: "3"}, streamCreated: created, wantCommitted: true, wantIntent: true},
		{point: "after-confirm", object: map[string]string{objstore.MetaIntent: "I1", objstore.MetaFirstSeq: "10", objstore.MetaLastSeq: "12", objstore.MetaCount: "3"}, streamCreated: created, wantCommitted: true, wantIntent: true},
		// Another writer's object at the key: this batch was never stored,
		// so its messages are exported again (under the prefix the
		// connector has now), not refused at every start.
		{point: "object of another batch", object: map[string]string{objstore.MetaIntent: "OTHER"}, streamCreated: created},
		{point: "stream re-created since", object: map[string]string{objstore.MetaIntent: "I1"}, streamCreated: created.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.point, func(t *testing.T) {
			store := &MemStore{}
			if tt.object != nil {
				store.preset(key, tt.object)
			}
			e := testExporter(t, store)
			intents := exportertest.NewMemKV()
			e.intents = intents
			s := newStreamWriter(e, config.Stream{Stream: "S", Consumer: "c", AckWait: time.Minute})
			s.created, s.intentPrefix = tt.streamCreated, statekey.StreamIntents("c", "S", "c")
			in := state.Intent{ID: "I1", Key: key, Stream: "S", StreamCreated: created, Consumer: "c",
				Seqs: progress.NewSeqs([]uint64{10, 11, 12}), Created: time.Now()}
			value, _ := json.Marshal(&in)
			ikey := s.intentPrefix + in.ID
			intents.Put(ikey, value)

			if err := s.recover(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.book.Start(0, nil, 1, 0, false, false)
			want := progress.New
			switch {
			case tt.wantCommitted:
				want = progress.Stored
			case tt.wantAwait:
				want = progress.Waiting
			}
			for _, q := range []uint64{10, 11, 12} {
				if got := s.book.Deliver(q, 0, true); got != want {
					t.Errorf("sequence %d delivered again is %d, want %d", q, got, want)
				}
			}
			if _, ok := intents.Value(ikey); ok != tt.wantIntent {
				t.Errorf("intent kept = %v, want %v", ok, tt.wantIntent)
			}
			if !tt.wantAwait {
				return
			}
			// Its writer has given up: the object is looked up again.
			r := newRunner(e, []*streamWriter{s})
			u := s.unsure[ikey]
			startChores(r, "resolve", u.deadline.Add(time.Second))
			settle(r)
			if _, ok := intents.Value(ikey); ok {
				t.Error("the intent of a batch never stored was kept")
			}
			if len(s.unsure) != 0 || len(s.book.Known()) != 0 {
				t.Errorf("after resolving: %d unresolved, intents %v known; want none", len(s.unsure), s.book.Known())
			}
			for _, q := range []uint64{10, 11, 12} {
				if got := s.book.Deliver(q, 0, true); got != progress.New {
					t.Errorf("after resolving, sequence %d delivered again is %d, want new", q, got)
				}
			}
		})
	}
}

func TestALatePutOfAStalledWriterIsFoundWhenResolving(t *testing.T) {
	const key = "raw/k.jsonl"
	store := &MemStore{}
	e := testExporter(t, store)
	intents := exportertest.NewMemKV()
	e.intents = intents
	s := newStreamWriter(e, config.Stream{Stream: "S", Consumer: "c", AckWait: time.Minute})
	s.intentPrefix = "p."
	in := &state.Intent{ID: "I1", Key: key, Seqs: progress.NewSeqs([]uint64{5, 6})}
	intents.Put("p.I1", []byte("{}"))
	s.book.Start(0, nil, 1, 0, false, false)
	s.await("p.I1", in, time.Now())
	// The stalled writer's PUT lands after recovery looked.
	store.preset(key, map[string]string{objstore.MetaIntent: "I1"})
	r := newRunner(e, []*streamWriter{s})
	startChores(r, "resolve", time.Now().Add(time.Second))
	settle(r)
	if got := s.book.Deliver(5, 0, true); got != progress.Stored {
		t.Fatal("the late object's sequences were not taken as stored")
	}
	if _, ok := intents.Value("p.I1"); !ok {
		t.Fatal("the intent of a stored batch was deleted before the ack floor passed it")
	}
}

// settle applies the work beside the loop as the loop would, until none is
// left.
// startChores starts r's chores called name that are due at now.
func startChores(r *runner, name string, now time.Time) {
	for _, c := range r.chores.list {
		if c.name == name {
			r.tryChore(context.Background(), c, now)
		}
	}
}

func settle(r *runner) {
	for r.chores.besideN > 0 {
		apply := <-r.wires.back
		r.chores.besideN--
		apply()
	}
}

// blockingDeletes is a state store whose deletions wait until release is
// closed.
type blockingDeletes struct {
	*exportertest.MemKV
	release chan struct{}
}

func (b *blockingDeletes) Delete(ctx context.Context, key string) error {
	<-b.release
	return b.MemKV.Delete(ctx, key)
}

// A floor that passes 10,000 batches at once deletes their intents a few at
// a time: one goroutine each would hold 10,000 stacks at once.
func TestForgettingManyIntentsRunsAFewDeletionsAtATime(t *testing.T) {
	e := testExporter(t, &MemStore{})
	st := &blockingDeletes{MemKV: exportertest.NewMemKV(), release: make(chan struct{})}
	e.intents = st
	r := newRunner(e, nil)
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("intent.k%d", i)
		st.Put(keys[i], []byte("{}"))
	}
	before := runtime.NumGoroutine()
	r.forget(keys)
	startChores(r, "forget", time.Now())
	time.Sleep(100 * time.Millisecond)
	if n := runtime.NumGoroutine() - before; n > forgetConcurrency+2 {
		t.Errorf("%d goroutines deleting intents, want at most %d", n, forgetConcurrency+2)
	}
	close(st.release)
	settle(r)
	if st.Len() != 0 {
		t.Errorf("%d intents left", st.Len())
	}
}

func TestImplausibleIntents(t *testing.T) {
	for _, tt := range []struct {
		name string
		seqs progress.Seqs
		want bool
	}{
		{"a batch", progress.NewSeqs([]uint64{3, 4, 5, 9}), false},
		{"up to the last sequence", progress.SeqsOf([]progress.Range{{First: 41, Last: 100}}), false},
		{"empty", progress.Seqs{}, true},
		{"past the last sequence", progress.SeqsOf([]progress.Range{{First: 99, Last: 101}}), true},
		{"2^36 sequences", progress.SeqsOf([]progress.Range{{First: 1, Last: 1 << 36}}), true},
		{"more than a batch", progress.SeqsOf([]progress.Range{{First: 1, Last: 40}, {First: 50, Last: 70}}), true},
		{"the whole range of uint64", progress.SeqsOf([]progress.Range{{First: 1, Last: ^uint64(0)}}), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			why := implausible(&state.Intent{Seqs: tt.seqs}, 100, 60)
			if (why != "") != tt.want {
				t.Fatalf("implausible = %q, want implausible: %v", why, tt.want)
			}
		})
	}
}

func TestAWaitingMessageKeepsItsLatestDelivery(t *testing.T) {
	s := &streamWriter{}
	s.book.Start(0, nil, 1, 0, false, false)
	deadline := time.Unix(1000, 0)
	s.await("u", &state.Intent{Seqs: progress.NewSeqs([]uint64{20, 21})}, deadline)
	s.await("later", &state.Intent{Seqs: progress.NewSeqs([]uint64{40})}, deadline.Add(time.Minute))
	s.wait(20, delivery{stream: 1})
	s.wait(20, delivery{stream: 2}) // redelivered after AckWait: only this one can be acked
	s.wait(21, delivery{stream: 3})
	s.wait(40, delivery{stream: 4})
	want := map[uint64]delivery{20: {stream: 2}, 21: {stream: 3}}
	if got := s.unsure["u"].waiting; !maps.Equal(got, want) {
		t.Fatalf("waiting %v, want %v", got, want)
	}
	if got := s.unsure["later"].waiting; !maps.Equal(got, map[uint64]delivery{40: {stream: 4}}) {
		t.Fatalf("the other intent's waiting: %v", got)
	}
	s.resetBook()
	if len(s.unsure) != 0 || s.book.Started() {
		t.Fatal("a reset kept unresolved intents or the ledger")
	}
}
