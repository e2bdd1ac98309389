package progress

import (
	"maps"
	"slices"
	"testing"

	"github.com/jetlake/jetlake/lossmarker"
)

// started returns a Book whose Ledger starts empty: every sequence is
// unknown.
func started() *Book {
	b := &Book{}
	b.Start(0, nil, 1, 0, false, false)
	return b
}

func TestBookClassifiesADeliveredSequence(t *testing.T) {
	unsure := NewSeqs([]uint64{20, 21})
	confirmed, err := NewSeqs([]uint64{30, 32}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	retire := func(b *Book) {
		b.BatchDone("r", 0, Outcome{Stored: true, Confirmed: true, Intent: "r", First: 30, Last: 32, Encoded: confirmed})
	}
	tests := []struct {
		name        string
		setup       func(b *Book)
		seq         uint64
		redelivered bool
		want        Class
	}{
		{name: "an unknown sequence is new", setup: func(*Book) {}, seq: 1, want: New},
		{name: "a held sequence delivered again is held", setup: func(b *Book) { b.Deliver(1, 0, false) }, seq: 1, redelivered: true, want: Holding},
		{name: "a released sequence is new again", setup: func(b *Book) { b.Deliver(1, 0, false); b.Release(1) }, seq: 1, redelivered: true, want: New},
		{name: "a sealed sequence is held", setup: func(b *Book) { b.Deliver(1, 0, false); b.Seal("i", 1) }, seq: 1, redelivered: true, want: Holding},
		{name: "a sequence of a stored batch is stored",
			setup: func(b *Book) {
				b.Deliver(1, 0, false)
				b.Seal("i", 1)
				b.Release(1)
				b.BatchDone("i", 1, Outcome{Stored: true, Confirmed: true, Intent: "i", Seqs: NewSeqs([]uint64{1})})
			}, seq: 1, redelivered: true, want: Stored},
		{name: "a sequence of a batch not stored is new again",
			setup: func(b *Book) {
				b.Deliver(1, 0, false)
				b.Seal("i", 1)
				b.Release(1)
				b.BatchDone("i", 1, Outcome{Seqs: NewSeqs([]uint64{1})})
			}, seq: 1, redelivered: true, want: New},
		{name: "a committed sequence is stored",
			setup: func(b *Book) { b.commit("c", NewSeqs([]uint64{10, 11, 12})) }, seq: 11, redelivered: true, want: Stored},
		{name: "a committed sequence acked again is new to the committed set",
			setup: func(b *Book) { b.commit("c", NewSeqs([]uint64{10, 11, 12})); b.Acked(11) }, seq: 11, redelivered: true, want: New},
		{name: "its neighbours stay committed",
			setup: func(b *Book) { b.commit("c", NewSeqs([]uint64{10, 11, 12})); b.Acked(11) }, seq: 12, redelivered: true, want: Stored},
		{name: "a sequence of an unresolved intent waits",
			setup: func(b *Book) { b.Await("u", unsure) }, seq: 21, redelivered: true, want: Waiting},
		{name: "waiting comes before held",
			setup: func(b *Book) { b.Deliver(20, 0, false); b.Await("u", unsure) }, seq: 20, redelivered: true, want: Waiting},
		{name: "a sequence of an intent resolved as never stored is new",
			setup: func(b *Book) { b.Await("u", unsure); b.Resolve("u", false) }, seq: 20, redelivered: true, want: New},
		{name: "a sequence of an intent resolved as stored is stored",
			setup: func(b *Book) { b.Await("u", unsure); b.Resolve("u", true) }, seq: 20, redelivered: true, want: Stored},
		{name: "a sequence of an intent found stored is stored",
			setup: func(b *Book) { b.Found("f", NewSeqs([]uint64{7})) }, seq: 7, want: Stored},
		{name: "a committed sequence held again is stored",
			setup: func(b *Book) { b.Deliver(11, 0, false); b.commit("c", NewSeqs([]uint64{11})) }, seq: 11, redelivered: true, want: Stored},
		{name: "a first delivery in a confirmed batch's range is new",
			setup: retire, seq: 32, want: New},
		{name: "a confirmed batch's message that comes back after its ack was lost is stored",
			setup: retire, seq: 32, redelivered: true, want: Stored},
		{name: "a redelivery in a confirmed batch's range but not in the batch is new",
			setup: retire, seq: 31, redelivered: true, want: New},
		{name: "an expanded batch's other messages are stored at their first look",
			setup: func(b *Book) { retire(b); b.Deliver(32, 0, true) }, seq: 30, want: Stored},
		{name: "a redelivery outside every confirmed batch's range is new",
			setup: retire, seq: 33, redelivered: true, want: New},
		{name: "a committed sequence the floor passed is no longer committed",
			setup: func(b *Book) { b.commit("c", NewSeqs([]uint64{10, 11, 12})); b.PassFloor(12) }, seq: 11, redelivered: true, want: New},
		{name: "a committed sequence of a batch the floor did not pass stays committed",
			setup: func(b *Book) { b.commit("c", NewSeqs([]uint64{10, 11, 12})); b.PassFloor(11) }, seq: 11, redelivered: true, want: Stored},
		{name: "a confirmed batch the floor passed is not expanded",
			setup: func(b *Book) { retire(b); b.PassFloor(32) }, seq: 32, redelivered: true, want: New},
		{name: "after a reset a committed sequence is new",
			setup: func(b *Book) { b.commit("c", NewSeqs([]uint64{11})); b.Reset(); b.Start(0, nil, 1, 0, false, false) }, seq: 11, redelivered: true, want: New},
		{name: "after a reset a waiting sequence is new",
			setup: func(b *Book) { b.Await("u", unsure); b.Reset(); b.Start(0, nil, 1, 0, false, false) }, seq: 20, redelivered: true, want: New},
		{name: "after a reset a confirmed batch is not expanded",
			setup: func(b *Book) { retire(b); b.Reset(); b.Start(0, nil, 1, 0, false, false) }, seq: 32, redelivered: true, want: New},
		{name: "a reset keeps what is held",
			setup: func(b *Book) { b.Deliver(1, 0, false); b.Reset(); b.Start(0, nil, 1, 0, false, false) }, seq: 1, redelivered: true, want: Holding},
		{name: "what the export record holds is stored",
			setup: func(b *Book) { b.Start(5, []Range{{8, 9}}, 1, 9, false, false) }, seq: 8, redelivered: true, want: Stored},
		{name: "the export record's floor is stored",
			setup: func(b *Book) { b.Start(5, nil, 1, 5, false, false) }, seq: 3, want: Stored},
		{name: "before Start every sequence is unready",
			setup: func(b *Book) { b.Stop() }, seq: 1, want: Unready},
		{name: "a stopped book still knows its waiting sequences once started again",
			setup: func(b *Book) { b.Await("u", unsure); b.Stop(); b.Start(0, nil, 1, 0, false, false) }, seq: 21, want: Waiting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := started()
			tt.setup(b)
			if got := b.Deliver(tt.seq, 0, tt.redelivered); got != tt.want {
				t.Fatalf("Deliver(%d, %v) = %d, want %d", tt.seq, tt.redelivered, got, tt.want)
			}
		})
	}
}

// Every change of a sequence's state is one call, and it reaches the
// Ledger too: stored batches and markers move the floor, returned
// sequences become holes.
func TestBookKeepsItsLedgerInStep(t *testing.T) {
	b := started()
	for q := uint64(1); q <= 6; q++ {
		if got := b.Deliver(q, 0, false); got != New {
			t.Fatalf("Deliver(%d) = %d", q, got)
		}
	}
	b.Seal("a", 3)
	b.Seal("b", 3)
	for q := uint64(1); q <= 3; q++ {
		b.Release(q)
	}
	b.BatchDone("a", 3, Outcome{Stored: true, Confirmed: true, Seqs: NewSeqs([]uint64{1, 2, 3})})
	if f := b.Ledger().Floor(); f != 3 {
		t.Fatalf("floor after the first batch: %d, want 3", f)
	}
	for q := uint64(4); q <= 6; q++ {
		b.Release(q)
	}
	b.BatchDone("b", 3, Outcome{Seqs: NewSeqs([]uint64{4, 5, 6})})
	if got := b.Ledger().Holes(); !slices.Equal(got, []Range{{4, 6}}) {
		t.Fatalf("holes after a batch not stored: %v, want [4-6]", got)
	}
	if held, sealed := b.Counts(); held != 0 || sealed != 0 {
		t.Fatalf("%d held, %d sealed after both batches", held, sealed)
	}
	b.MarkerDone([]lossmarker.Range{{First: 4, Last: 6}}, []uint64{4, 5, 6}, true)
	if f := b.Ledger().Floor(); f != 6 || b.Ledger().HasHoles() {
		t.Fatalf("after the marker: floor %d, holes %v", f, b.Ledger().Holes())
	}
}

func TestBookCountsHeldAndSealedMessages(t *testing.T) {
	b := started()
	for q := uint64(1); q <= 5; q++ {
		b.Deliver(q, 0, false)
	}
	b.Deliver(3, 0, true) // delivered again while held
	steps := []struct {
		name                 string
		do                   func()
		wantHeld, wantSealed int
	}{
		{"held", func() {}, 5, 0},
		{"a batch of three sealed", func() { b.Seal("a", 3) }, 5, 3},
		{"a batch of one sealed", func() { b.Seal("b", 1) }, 5, 4},
		{"the first batch done", func() {
			for q := uint64(1); q <= 3; q++ {
				b.Release(q)
			}
			b.BatchDone("a", 3, Outcome{Seqs: NewSeqs([]uint64{1, 2, 3})})
		}, 2, 1},
		{"an absent sequence released", func() { b.Release(99) }, 2, 1},
		{"the second batch done", func() { b.Release(4); b.BatchDone("b", 1, Outcome{Seqs: NewSeqs([]uint64{4})}) }, 1, 0},
	}
	for _, st := range steps {
		st.do()
		if held, sealed := b.Counts(); held != st.wantHeld || sealed != st.wantSealed {
			t.Fatalf("%s: %d held, %d sealed; want %d, %d", st.name, held, sealed, st.wantHeld, st.wantSealed)
		}
	}
}

func TestBookKnowsTheIntentsItAccountsFor(t *testing.T) {
	b := started()
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"empty", func() {}, nil},
		{"a batch in flight", func() { b.Seal("own", 2) }, []string{"own"}},
		{"an unresolved intent", func() { b.Await("unsure", NewSeqs([]uint64{7})) }, []string{"own", "unsure"}},
		{"the batch stored, acks unconfirmed", func() {
			b.BatchDone("own", 2, Outcome{Stored: true, Intent: "own", Seqs: NewSeqs([]uint64{1, 2})})
		}, []string{"own", "unsure"}},
		{"a batch stored and confirmed", func() {
			b.BatchDone("confirmed", 0, Outcome{Stored: true, Confirmed: true, Intent: "confirmed", First: 3, Last: 4})
		}, []string{"confirmed", "own", "unsure"}},
		{"a confirmed batch without an intent (no state bucket)", func() {
			b.Seal("unwritten", 1)
			b.BatchDone("unwritten", 1, Outcome{Stored: true, Confirmed: true, First: 5, Last: 5})
		}, []string{"confirmed", "own", "unsure"}},
		{"the unresolved intent resolved", func() { b.Resolve("unsure", false) }, []string{"confirmed", "own"}},
		{"reset", func() { b.Reset() }, nil},
	}
	for _, st := range steps {
		st.do()
		if got := slices.Sorted(maps.Keys(b.Known())); !slices.Equal(got, st.want) {
			t.Fatalf("%s: known %q, want %q", st.name, got, st.want)
		}
	}
}

func TestBookForgetsIntentsOnceTheFloorPassesThem(t *testing.T) {
	b := started()
	seqs, err := NewSeqs([]uint64{4, 6}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b.commit("a", NewSeqs([]uint64{1, 2, 3}))
	b.BatchDone("b", 0, Outcome{Stored: true, Confirmed: true, Intent: "b", First: 4, Last: 6, Encoded: seqs})
	b.commit("c", NewSeqs([]uint64{10}))
	b.expand(6) // as a redelivery of 6 does: its ack was lost
	steps := []struct {
		floor      uint64
		wantForget []string
		committed  []uint64 // sequences still committed
	}{
		{0, nil, []uint64{1, 2, 3, 4, 6, 10}},
		{2, nil, []uint64{1, 2, 3, 4, 6, 10}}, // a batch is forgotten whole, once its last sequence is passed
		{3, []string{"a"}, []uint64{4, 6, 10}},
		{3, nil, []uint64{4, 6, 10}},
		{9, []string{"b"}, []uint64{10}},
		{100, []string{"c"}, nil},
	}
	for _, st := range steps {
		forget := b.PassFloor(st.floor)
		if !slices.Equal(forget, st.wantForget) {
			t.Fatalf("floor %d: forget %q, want %q", st.floor, forget, st.wantForget)
		}
		var committed []uint64
		for q := uint64(1); q <= 10; q++ {
			if b.committed.Has(q) {
				committed = append(committed, q)
			}
		}
		if !slices.Equal(committed, st.committed) {
			t.Fatalf("floor %d: committed %v, want %v", st.floor, committed, st.committed)
		}
	}
	if len(b.Known()) != 0 {
		t.Fatalf("known after every batch was passed: %v", b.Known())
	}
}

// The Book keeps ranges, never an entry per sequence: an intent naming
// four billion sequences costs what its one range costs, committed or
// waiting.
func TestBookKeepsRangesNotSequences(t *testing.T) {
	b := started()
	b.Found("c", SeqsOf([]Range{{First: 1, Last: 1 << 32}}))
	b.Await("u", SeqsOf([]Range{{First: 1<<32 + 1, Last: 1 << 33}}))
	if got := b.Deliver(1<<31, 0, true); got != Stored {
		t.Errorf("a committed sequence: %v", got)
	}
	if got := b.Deliver(1<<33-5, 0, true); got != Waiting {
		t.Errorf("a waiting sequence: %v", got)
	}
	if n := len(b.committed.Runs()) + len(b.pending.Runs()); n != 2 {
		t.Errorf("%d ranges, want 2", n)
	}
	if forget := b.PassFloor(1 << 32); len(forget) != 1 || !b.committed.Empty() {
		t.Errorf("PassFloor: forget %v, committed %v", forget, b.committed.Runs())
	}
}

// A filtered consumer taken over while the instance before it had a batch
// in flight: its intent is unresolved, and the consumer delivers past its
// sequences. The batch turns out never stored: its messages are new when
// they come back, not taken for another subject's.
func TestAnUnresolvedIntentPassedByAFilteredConsumerIsExportedWhenNeverStored(t *testing.T) {
	var b Book
	b.Await("other", NewSeqs([]uint64{12}))
	b.Start(10, nil, 1, 10, true, false)
	steps := []struct {
		seq, after uint64
		want       Class
	}{{11, 0, New}, {12, 11, Waiting}, {13, 12, New}, {20, 13, New}}
	for _, st := range steps {
		if got := b.Deliver(st.seq, st.after, false); got != st.want {
			t.Fatalf("Deliver(%d) = %d, want %d", st.seq, got, st.want)
		}
	}
	b.Resolve("other", false)
	if got := b.Deliver(12, 0, false); got != New {
		t.Fatalf("the never stored batch's message came back as %d, want New", got)
	}
}

// An instance that takes a stream over after the one before exported
// everything gets only messages stored already: the frontier still moves
// with them, so that what the consumer delivered is known to be in the
// loop (an ack-less consumer is idle only then).
func TestMessagesStoredAlreadyMoveTheFrontier(t *testing.T) {
	var b Book
	b.Start(10, nil, 1, 12, false, false)
	b.Found("i", NewSeqs([]uint64{13, 14}))
	for _, q := range []uint64{13, 14} {
		if got := b.Deliver(q, 0, false); got != Stored {
			t.Fatalf("Deliver(%d) = %d, want Stored", q, got)
		}
	}
	if l := b.Ledger(); l.Frontier() != 14 {
		t.Fatalf("frontier %d, want 14", l.Frontier())
	}
}
