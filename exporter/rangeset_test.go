package exporter

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRangeSetMatchesAModel applies random adds and removes to a rangeSet
// and to a plain set of sequences, and checks after each step that they
// hold the same sequences and that the ranges stay sorted, disjoint and
// not adjacent.
func TestRangeSetMatchesAModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for round := range 200 {
		var s rangeSet
		model := map[uint64]bool{}
		for step := range 50 {
			a := 1 + rng.Uint64N(60)
			r := Range{a, a + rng.Uint64N(8)}
			if rng.IntN(3) == 0 {
				s.remove(r)
				for q := r.First; q <= r.Last; q++ {
					delete(model, q)
				}
			} else {
				s.add(r)
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
		for _, r := range s.within(w) {
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
		s.dropThrough(cut)
		for q := range model {
			if q <= cut {
				delete(model, q)
			}
		}
		checkRangeSet(t, &s, model, round, -1)
	}
}

func checkRangeSet(t *testing.T, s *rangeSet, model map[uint64]bool, round, step int) {
	t.Helper()
	for i, r := range s.rs {
		if r.First > r.Last || i > 0 && r.First <= s.rs[i-1].Last+1 {
			t.Fatalf("round %d step %d: ranges %v are not sorted, disjoint and apart", round, step, s.rs)
		}
	}
	for q := uint64(0); q < 80; q++ {
		if s.has(q) != model[q] {
			t.Fatalf("round %d step %d: has(%d) = %v, want %v; ranges %v", round, step, q, s.has(q), model[q], s.rs)
		}
	}
	if got := s.count(); got != uint64(len(model)) {
		t.Fatalf("round %d step %d: count = %d, want %d", round, step, got, len(model))
	}
}

func TestRangeSetAtTheEndsOfTheSequenceSpace(t *testing.T) {
	var s rangeSet
	s.add(Range{math.MaxUint64 - 1, math.MaxUint64})
	s.add(Range{1, math.MaxUint64 - 2})
	if want := []Range{{1, math.MaxUint64}}; !slices.Equal(s.runs(), want) {
		t.Fatalf("ranges %v, want %v", s.runs(), want)
	}
	if s.count() != math.MaxUint64 {
		t.Errorf("count = %d", s.count())
	}
	s.remove(Range{math.MaxUint64, math.MaxUint64})
	s.remove(Range{1, 1})
	if want := []Range{{2, math.MaxUint64 - 1}}; !slices.Equal(s.runs(), want) {
		t.Fatalf("ranges %v, want %v", s.runs(), want)
	}
	// 300 million sequences are one range.
	var big rangeSet
	big.add(Range{401, 300_000_000})
	big.remove(Range{1000, 1000})
	if len(big.runs()) != 2 || big.count() != 300_000_000-401 {
		t.Errorf("ranges %v, count %d", big.runs(), big.count())
	}
}

// TestRangeSetBulkOperationsMatchAModel applies addAll and removeAll of
// random sorted lists, short and long, to a rangeSet and to a plain set.
func TestRangeSetBulkOperationsMatchAModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for round := range 300 {
		var s rangeSet
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
				s.removeAll(rs)
			} else {
				s.addAll(rs)
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
		var s rangeSet
		for _, rs := range lists {
			s.addAll(rs)
		}
		if got, want := s.count(), uint64(batches*perBatch); got != want {
			b.Fatalf("count %d, want %d", got, want)
		}
	}
}
