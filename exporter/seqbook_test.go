package exporter

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jetlake/jetlake/exporter/progress"
)

func TestSeqBookClassifiesADeliveredSequence(t *testing.T) {
	deadline := time.Unix(1000, 0)
	unsure := func() *intent { return &intent{ID: "u", Key: "k", Seqs: progress.NewSeqs([]uint64{20, 21})} }
	confirmed, err := progress.NewSeqs([]uint64{30, 32}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		setup       func(b *seqBook)
		seq         uint64
		redelivered bool
		want        seqClass
	}{
		{name: "an unknown sequence is new", setup: func(*seqBook) {}, seq: 1, want: seqNew},
		{name: "a held sequence delivered again is held", setup: func(b *seqBook) { b.hold(1) }, seq: 1, redelivered: true, want: seqHeld},
		{name: "a released sequence is new again", setup: func(b *seqBook) { b.hold(1); b.release(1) }, seq: 1, redelivered: true, want: seqNew},
		{name: "a sealed sequence is held", setup: func(b *seqBook) { b.hold(1); b.seal("i", 1) }, seq: 1, redelivered: true, want: seqHeld},
		{name: "a sequence of a stored, unconfirmed batch is committed",
			setup: func(b *seqBook) { b.commit("c", progress.NewSeqs([]uint64{10, 11, 12})) }, seq: 11, redelivered: true, want: seqCommitted},
		{name: "a committed sequence acked again is new",
			setup: func(b *seqBook) { b.commit("c", progress.NewSeqs([]uint64{10, 11, 12})); b.acked(11) }, seq: 11, redelivered: true, want: seqNew},
		{name: "acking one committed sequence leaves the others committed",
			setup: func(b *seqBook) { b.commit("c", progress.NewSeqs([]uint64{10, 11, 12})); b.acked(11) }, seq: 12, redelivered: true, want: seqCommitted},
		{name: "a sequence of an unresolved intent waits",
			setup: func(b *seqBook) { b.await("u", unsure(), deadline) }, seq: 21, redelivered: true, want: seqWaiting},
		{name: "waiting comes before held",
			setup: func(b *seqBook) { b.hold(20); b.await("u", unsure(), deadline) }, seq: 20, redelivered: true, want: seqWaiting},
		{name: "a sequence of an intent resolved as never stored is new",
			setup: func(b *seqBook) { b.await("u", unsure(), deadline); b.resolve("u") }, seq: 20, redelivered: true, want: seqNew},
		{name: "a sequence of an intent resolved as stored is committed",
			setup: func(b *seqBook) {
				in := unsure()
				b.await("u", in, deadline)
				b.commit("u", in.Seqs)
				b.resolve("u")
			}, seq: 20, redelivered: true, want: seqCommitted},
		{name: "a committed sequence held again is committed",
			setup: func(b *seqBook) { b.hold(11); b.commit("c", progress.NewSeqs([]uint64{11})) }, seq: 11, redelivered: true, want: seqCommitted},
		{name: "a first delivery in a confirmed batch's range is new",
			setup: func(b *seqBook) { b.retire("r", 30, 32, confirmed) }, seq: 32, want: seqNew},
		{name: "a confirmed batch's message that comes back after its ack was lost is committed",
			setup: func(b *seqBook) { b.retire("r", 30, 32, confirmed) }, seq: 32, redelivered: true, want: seqCommitted},
		{name: "a redelivery in a confirmed batch's range but not in the batch is new",
			setup: func(b *seqBook) { b.retire("r", 30, 32, confirmed) }, seq: 31, redelivered: true, want: seqNew},
		{name: "an expanded batch's other messages are committed at their first look",
			setup: func(b *seqBook) { b.retire("r", 30, 32, confirmed); b.classify(32, true) }, seq: 30, want: seqCommitted},
		{name: "a redelivery outside every confirmed batch's range is new",
			setup: func(b *seqBook) { b.retire("r", 30, 32, confirmed) }, seq: 33, redelivered: true, want: seqNew},
		{name: "a committed sequence the ack floor passed is new",
			setup: func(b *seqBook) { b.commit("c", progress.NewSeqs([]uint64{10, 11, 12})); b.passFloor(12) }, seq: 11, redelivered: true, want: seqNew},
		{name: "a committed sequence of a batch the ack floor did not pass stays committed",
			setup: func(b *seqBook) { b.commit("c", progress.NewSeqs([]uint64{10, 11, 12})); b.passFloor(11) }, seq: 11, redelivered: true, want: seqCommitted},
		{name: "a confirmed batch the ack floor passed is not expanded",
			setup: func(b *seqBook) { b.retire("r", 30, 32, confirmed); b.passFloor(32) }, seq: 32, redelivered: true, want: seqNew},
		{name: "after a reset a committed sequence is new",
			setup: func(b *seqBook) { b.commit("c", progress.NewSeqs([]uint64{11})); b.reset() }, seq: 11, redelivered: true, want: seqNew},
		{name: "after a reset a waiting sequence is new",
			setup: func(b *seqBook) { b.await("u", unsure(), deadline); b.reset() }, seq: 20, redelivered: true, want: seqNew},
		{name: "after a reset a confirmed batch is not expanded",
			setup: func(b *seqBook) { b.retire("r", 30, 32, confirmed); b.reset() }, seq: 32, redelivered: true, want: seqNew},
		{name: "a reset keeps what is held",
			setup: func(b *seqBook) { b.hold(1); b.reset() }, seq: 1, redelivered: true, want: seqHeld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b seqBook
			tt.setup(&b)
			if got := b.classify(tt.seq, tt.redelivered); got != tt.want {
				t.Fatalf("classify(%d, %v) = %d, want %d", tt.seq, tt.redelivered, got, tt.want)
			}
		})
	}
}

func TestSeqBookCountsHeldAndSealedMessages(t *testing.T) {
	var b seqBook
	for q := uint64(1); q <= 5; q++ {
		b.hold(q)
	}
	b.hold(3) // delivered again while held
	steps := []struct {
		name                 string
		do                   func()
		wantHeld, wantSealed int
	}{
		{"held", func() {}, 5, 0},
		{"a batch of three sealed", func() { b.seal("a", 3) }, 5, 3},
		{"a batch of one sealed", func() { b.seal("b", 1) }, 5, 4},
		{"the first batch done", func() {
			b.unseal("a", 3)
			for q := uint64(1); q <= 3; q++ {
				b.release(q)
			}
		}, 2, 1},
		{"an absent sequence released", func() { b.release(99) }, 2, 1},
		{"the second batch done", func() { b.unseal("b", 1); b.release(4) }, 1, 0},
	}
	for _, st := range steps {
		st.do()
		if held, sealed := b.counts(); held != st.wantHeld || sealed != st.wantSealed {
			t.Fatalf("%s: %d held, %d sealed; want %d, %d", st.name, held, sealed, st.wantHeld, st.wantSealed)
		}
	}
}

func TestSeqBookKnowsTheIntentsItAccountsFor(t *testing.T) {
	var b seqBook
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"empty", func() {}, nil},
		{"a batch in flight", func() { b.seal("own", 2) }, []string{"own"}},
		{"an unresolved intent", func() {
			b.await("unsure", &intent{Seqs: progress.NewSeqs([]uint64{7})}, time.Unix(1000, 0))
		}, []string{"own", "unsure"}},
		{"the batch stored, acks unconfirmed", func() {
			b.unseal("own", 2)
			b.commit("own", progress.NewSeqs([]uint64{1, 2}))
		}, []string{"own", "unsure"}},
		{"a batch stored and confirmed", func() { b.retire("confirmed", 3, 4, nil) }, []string{"confirmed", "own", "unsure"}},
		{"the unresolved intent resolved", func() { b.resolve("unsure") }, []string{"confirmed", "own"}},
		{"reset", func() { b.reset() }, nil},
	}
	for _, st := range steps {
		st.do()
		if got := slices.Sorted(maps.Keys(b.known())); !slices.Equal(got, st.want) {
			t.Fatalf("%s: known %q, want %q", st.name, got, st.want)
		}
	}
}

func TestSeqBookKeepsTheLatestDeliveryOfAWaitingMessage(t *testing.T) {
	var b seqBook
	deadline := time.Unix(1000, 0)
	b.await("u", &intent{Seqs: progress.NewSeqs([]uint64{20, 21})}, deadline)
	b.await("later", &intent{Seqs: progress.NewSeqs([]uint64{40})}, deadline.Add(time.Minute))
	b.wait(20, delivery{stream: 1})
	b.wait(20, delivery{stream: 2}) // redelivered after AckWait: only this one can be acked
	b.wait(21, delivery{stream: 3})

	due := func(now time.Time) []string {
		var keys []string
		for ikey := range b.due(now) {
			keys = append(keys, ikey)
		}
		slices.Sort(keys)
		return keys
	}
	if got := due(deadline.Add(-time.Nanosecond)); len(got) != 0 {
		t.Fatalf("due before the deadline: %q", got)
	}
	if got := due(deadline); !slices.Equal(got, []string{"u"}) {
		t.Fatalf("due at the deadline: %q, want [u]", got)
	}
	waiting := b.resolve("u")
	want := map[uint64]delivery{20: {stream: 2}, 21: {stream: 3}}
	if !maps.Equal(waiting, want) {
		t.Fatalf("resolve returned %v, want %v", waiting, want)
	}
	if got := b.classify(20, true); got != seqNew {
		t.Fatalf("a resolved intent's sequence is %d, want new", got)
	}
	if got := b.classify(40, true); got != seqWaiting {
		t.Fatalf("another intent's sequence is %d, want waiting", got)
	}
	if b.resolve("u") != nil {
		t.Fatal("resolving twice returned deliveries")
	}
	if got := due(deadline.Add(time.Hour)); !slices.Equal(got, []string{"later"}) {
		t.Fatalf("due after resolving: %q, want [later]", got)
	}
}

func TestSeqBookForgetsIntentsOnceTheAckFloorPassesThem(t *testing.T) {
	var b seqBook
	seqs, err := progress.NewSeqs([]uint64{4, 6}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b.commit("a", progress.NewSeqs([]uint64{1, 2, 3}))
	b.retire("b", 4, 6, seqs)
	b.commit("c", progress.NewSeqs([]uint64{10}))
	if b.classify(6, true) != seqCommitted { // expands b: its ack was lost
		t.Fatal("a lost ack's message of a confirmed batch is not committed")
	}
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
		forget := b.passFloor(st.floor)
		if !slices.Equal(forget, st.wantForget) {
			t.Fatalf("floor %d: forget %q, want %q", st.floor, forget, st.wantForget)
		}
		var committed []uint64
		for q := uint64(1); q <= 10; q++ {
			if b.classify(q, false) == seqCommitted {
				committed = append(committed, q)
			}
		}
		if !slices.Equal(committed, st.committed) {
			t.Fatalf("floor %d: committed %v, want %v", st.floor, committed, st.committed)
		}
	}
	if len(b.known()) != 0 {
		t.Fatalf("known after every batch was passed: %v", b.known())
	}
}

// The book keeps ranges, never an entry per sequence: an intent naming
// four billion sequences costs what its one range costs, committed or
// waiting.
func TestSeqBookKeepsRangesNotSequences(t *testing.T) {
	var b seqBook
	huge := progress.SeqsOf([]progress.Range{{First: 1, Last: 1 << 32}})
	b.commit("c", huge)
	b.await("u", &intent{ID: "u", Seqs: progress.SeqsOf([]progress.Range{{First: 1<<32 + 1, Last: 1 << 33}})}, time.Unix(1000, 0))
	if got := b.classify(1<<31, true); got != seqCommitted {
		t.Errorf("a committed sequence: %v", got)
	}
	if got := b.classify(1<<33-5, true); got != seqWaiting {
		t.Errorf("a waiting sequence: %v", got)
	}
	if n := len(b.committed.Runs()) + len(b.pending.Runs()); n != 2 {
		t.Errorf("%d ranges, want 2", n)
	}
	if forget := b.passFloor(1 << 32); len(forget) != 1 || !b.committed.Empty() {
		t.Errorf("passFloor: forget %v, committed %v", forget, b.committed.Runs())
	}
}
