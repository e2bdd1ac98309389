package progress

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRangeSetMatchesAModel applies random adds and removes to a Set
// and to a plain set of sequences, and checks after each step that they
// hold the same sequences and that the ranges stay sorted, disjoint and
// not adjacent.
func TestRangeSetMatchesAModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for round := range 200 {
		var s Set
		model := map[uint64]bool{}
		for step := range 50 {
			a := 1 + rng.Uint64N(60)
			r := Range{a, a + rng.Uint64N(8)}
			if rng.IntN(3) == 0 {
				s.Remove(r)
				for q := r.First; q <= r.Last; q++ {
					delete(model, q)
				}
			} else {
				s.Add(r)
				for q := r.First; q <= r.Last; q++ {
					model[q] = true
				}
			}
			checkRangeSet(t, &s, model, round, step)
		}
		// within and dropThrough agree with the model too.
		w := Range{1 + rng.Uint64N(60), 0}
		w.Last = w.First + rng.Uint64N(20)
		var got []uint64
		for _, r := range s.Within(w) {
			for q := r.First; q <= r.Last; q++ {
				got = append(got, q)
			}
		}
		var want []uint64
		for q := w.First; q <= w.Last; q++ {
			if model[q] {
				want = append(want, q)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: within(%v) = %v, want %v", round, w, got, want)
		}
		cut := rng.Uint64N(70)
		s.Remove(Range{0, cut})
		for q := range model {
			if q <= cut {
				delete(model, q)
			}
		}
		checkRangeSet(t, &s, model, round, -1)
	}
}

func checkRangeSet(t *testing.T, s *Set, model map[uint64]bool, round, step int) {
	t.Helper()
	for q := uint64(0); q < 80; q++ {
		if s.Has(q) != model[q] {
			t.Fatalf("round %d step %d: before a merge, has(%d) = %v, want %v; ranges %v + %v", round, step, q, s.Has(q), model[q], s.rs, s.recent)
		}
	}
	rs := s.Runs()
	for i, r := range rs {
		if r.First > r.Last || i > 0 && r.First <= rs[i-1].Last+1 {
			t.Fatalf("round %d step %d: ranges %v are not sorted, disjoint and apart", round, step, rs)
		}
	}
	for q := uint64(0); q < 80; q++ {
		if s.Has(q) != model[q] {
			t.Fatalf("round %d step %d: has(%d) = %v, want %v; ranges %v", round, step, q, s.Has(q), model[q], s.rs)
		}
	}
	if got := s.Count(); got != uint64(len(model)) {
		t.Fatalf("round %d step %d: count = %d, want %d", round, step, got, len(model))
	}
}

func TestRangeSetAtTheEndsOfTheSequenceSpace(t *testing.T) {
	var s Set
	s.Add(Range{math.MaxUint64 - 1, math.MaxUint64})
	s.Add(Range{1, math.MaxUint64 - 2})
	if want := []Range{{1, math.MaxUint64}}; !slices.Equal(s.Runs(), want) {
		t.Fatalf("ranges %v, want %v", s.Runs(), want)
	}
	if s.Count() != math.MaxUint64 {
		t.Errorf("count = %d", s.Count())
	}
	s.Remove(Range{math.MaxUint64, math.MaxUint64})
	s.Remove(Range{1, 1})
	if want := []Range{{2, math.MaxUint64 - 1}}; !slices.Equal(s.Runs(), want) {
		t.Fatalf("ranges %v, want %v", s.Runs(), want)
	}
	// 300 million sequences are one range.
	var big Set
	big.Add(Range{401, 300_000_000})
	big.Remove(Range{1000, 1000})
	if len(big.Runs()) != 2 || big.Count() != 300_000_000-401 {
		t.Errorf("ranges %v, count %d", big.Runs(), big.Count())
	}
}

// TestRangeSetBulkOperationsMatchAModel applies addAll and removeAll of
// random sorted lists, short and long, to a Set and to a plain set.
func TestRangeSetBulkOperationsMatchAModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for round := range 300 {
		var s Set
		model := map[uint64]bool{}
		for step := range 20 {
			var rs []Range
			at := uint64(rng.IntN(6))
			for range rng.IntN(14) {
				first := at + uint64(rng.IntN(4))
				r := Range{first, first + uint64(rng.IntN(5))}
				if r.Last >= 79 {
					break
				}
				rs = append(rs, r)
				at = r.Last + 1
			}
			remove := rng.IntN(3) == 0
			if remove {
				s.RemoveAll(rs)
			} else {
				s.AddAll(rs)
			}
			for _, r := range rs {
				for q := r.First; q <= r.Last; q++ {
					if remove {
						delete(model, q)
					} else {
						model[q] = true
					}
				}
			}
			checkRangeSet(t, &s, model, round, step)
		}
	}
}

// BenchmarkRangeSetAddInterleavedBatches adds the sequences of batches of
// one subject among ten, as a stream of ten subjects is stored in files of
// 20,000 messages: every batch is 20,000 single-sequence ranges between
// those of the others.
func BenchmarkRangeSetAddInterleavedBatches(b *testing.B) {
	const subjects, perBatch, batches = 10, 20_000, 50
	var lists [][]Range
	for k := range batches {
		subj, round := k%subjects, k/subjects
		rs := make([]Range, perBatch)
		for i := range rs {
			q := uint64((round*perBatch+i)*subjects + subj + 1)
			rs[i] = Range{q, q}
		}
		lists = append(lists, rs)
	}
	b.ReportAllocs()
	for b.Loop() {
		var s Set
		for _, rs := range lists {
			s.AddAll(rs)
		}
		if got, want := s.Count(), uint64(batches*perBatch); got != want {
			b.Fatalf("count %d, want %d", got, want)
		}
	}
}

// A set large enough to take new ranges into its second list agrees with a
// model through adds in a random order, removes and floors absorbed, and
// its lookups agree before the lists are merged.
func TestALargeRangeSetMatchesAModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	const span = 20_000
	var s Set
	model := map[uint64]bool{}
	floor := uint64(0)
	for step := range 30_000 {
		switch k := rng.IntN(100); {
		case k < 10:
			// Past the end, touching it or not, as a filtered consumer's
			// gaps come.
			end := floor
			for _, r := range s.Runs() {
				end = max(end, r.Last)
			}
			a := end + 1 + rng.Uint64N(2)
			r := Range{a, a + rng.Uint64N(3)}
			s.Add(r)
			for q := r.First; q <= r.Last; q++ {
				model[q] = true
			}
		case k < 85:
			a := floor + 1 + rng.Uint64N(span)
			r := Range{a, a + rng.Uint64N(3)}
			s.Add(r)
			for q := r.First; q <= r.Last; q++ {
				model[q] = true
			}
		case k < 90:
			a := floor + 1 + rng.Uint64N(span)
			r := Range{a, a + rng.Uint64N(50)}
			s.Remove(r)
			for q := r.First; q <= r.Last; q++ {
				delete(model, q)
			}
		case k < 95:
			// The floor moves over what starts right above it, as a
			// ledger's does; the model drops what it passes.
			for model[floor+1] {
				floor++
			}
			if got := s.Absorb(floor); got != floor {
				t.Fatalf("step %d: absorb = %d, want %d", step, got, floor)
			}
			for q := range model {
				if q <= floor {
					delete(model, q)
				}
			}
		default:
			q := floor + 1 + rng.Uint64N(span)
			if s.Has(q) != model[q] {
				t.Fatalf("step %d: has(%d) = %v, want %v", step, q, s.Has(q), model[q])
			}
		}
		if step%3000 == 2999 {
			got := map[uint64]bool{}
			for _, r := range s.Runs() {
				for q := r.First; q <= r.Last; q++ {
					got[q] = true
				}
			}
			if len(got) != len(model) {
				t.Fatalf("step %d: %d sequences, want %d", step, len(got), len(model))
			}
			for q := range model {
				if !got[q] {
					t.Fatalf("step %d: %d missing", step, q)
				}
			}
			if len(s.Runs()) < smallSet {
				t.Fatalf("step %d: only %d ranges: the second list is not exercised", step, len(s.Runs()))
			}
		}
	}
}

// BenchmarkRangeSetAddScattered adds the sequences of 10,000 batches of ten,
// each of one subject among 10,000, as the high-cardinality workload stores
// them: every batch's sequences lie 10,000 apart across the whole stream.
func BenchmarkRangeSetAddScattered(b *testing.B) {
	const subjects, per = 10_000, 10
	order := rand.New(rand.NewPCG(1, 2)).Perm(subjects)
	b.ReportAllocs()
	for b.Loop() {
		var s Set
		floor := uint64(0)
		rs := make([]Range, per)
		for _, subj := range order {
			for i := range rs {
				q := uint64(i*subjects + subj + 1)
				rs[i] = Range{q, q}
			}
			s.AddAll(rs)
			floor = s.Absorb(floor)
		}
		if floor != subjects*per {
			b.Fatalf("floor %d", floor)
		}
	}
}

// BenchmarkRangeSetPartitionDeliveries records a partition's deliveries as
// a filtered consumer's ledger does: each one adds the gap before it (the
// other partitions' sequences) at the end of the done ranges, and stored
// batches of 1,000 fill its own sequences in, 50,000 deliveries behind.
func BenchmarkRangeSetPartitionDeliveries(b *testing.B) {
	const messages, every, batch, behind = 200_000, 4, 1000, 50_000
	b.ReportAllocs()
	for b.Loop() {
		var s Set
		floor, frontier := uint64(0), uint64(0)
		stored := make([]Range, 0, batch)
		storedUpTo := 0
		store := func(upTo int) {
			for ; storedUpTo < upTo; storedUpTo++ {
				q := uint64(storedUpTo*every + every)
				stored = append(stored, Range{q, q})
				if len(stored) == batch {
					s.AddAll(stored)
					stored = stored[:0]
					floor = s.Absorb(floor)
				}
			}
		}
		for i := range messages {
			q := uint64(i*every + every)
			s.Add(Range{frontier + 1, q - 1})
			frontier = q
			store(max(i-behind, 0))
		}
		store(messages)
		if floor != messages*every {
			b.Fatalf("floor %d", floor)
		}
	}
}
