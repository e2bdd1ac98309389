package progress

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestLedger(t *testing.T) {
	type step struct {
		name string
		do   func(l *Ledger) (lost, headLost []Range)
	}
	tests := []struct {
		name string
		// start
		floor               uint64
		done                []Range
		firstSeq, delivered uint64
		filtered            bool
		steps               []step
		// after the steps
		wantFloor    uint64
		wantHoles    []Range
		wantLost     []Range // of the last step
		wantHeadLost []Range
		wantMarking  []Range
	}{
		{
			name:  "a purge up to a sequence while stopped: one range, however long",
			floor: 400, firstSeq: 300_000_000, delivered: 299_999_999,
			steps: []step{{"walk finds nothing", func(l *Ledger) ([]Range, []Range) {
				return walked(l, []Range{{401, 299_999_999}}, nil)
			}}},
			wantFloor: 400, wantLost: []Range{{401, 299_999_999}}, wantMarking: []Range{{401, 299_999_999}},
		},
		{
			name:  "the marker stored moves the floor over the lost range",
			floor: 400, firstSeq: 1001, delivered: 1000,
			steps: []step{
				{"walk", func(l *Ledger) ([]Range, []Range) {
					return walked(l, []Range{{401, 1000}}, nil)
				}},
				{"marker stored", func(l *Ledger) ([]Range, []Range) {
					l.Marked(Range{401, 1000})
					return nil, nil
				}},
			},
			wantFloor: 1000,
		},
		{
			name:  "a marker not stored makes its range holes again",
			floor: 400, firstSeq: 1001, delivered: 1000,
			steps: []step{
				{"walk", func(l *Ledger) ([]Range, []Range) {
					return walked(l, []Range{{401, 1000}}, nil)
				}},
				{"marker failed", func(l *Ledger) ([]Range, []Range) {
					l.Unmarked(Range{401, 1000})
					return nil, nil
				}},
			},
			wantFloor: 400, wantHoles: []Range{{401, 1000}},
		},
		{
			name:  "messages the stream still holds stay holes until they come back",
			floor: 10, firstSeq: 1, delivered: 20,
			steps: []step{
				{"walk", func(l *Ledger) ([]Range, []Range) {
					return walked(l, []Range{{11, 20}}, []uint64{12, 15})
				}},
			},
			wantFloor: 10, wantHoles: []Range{{12, 12}, {15, 15}},
			wantLost:    []Range{{11, 11}, {13, 14}, {16, 20}},
			wantMarking: []Range{{11, 11}, {13, 14}, {16, 20}},
		},
		{
			name:  "a jump in deliveries makes holes; the skipped message coming back fills its hole",
			floor: 0, firstSeq: 1, delivered: 0,
			steps: []step{
				{"deliver 1, 2, 5", func(l *Ledger) ([]Range, []Range) {
					l.Delivered(1, 0)
					l.Delivered(2, 0)
					l.Delivered(5, 0)
					return nil, nil
				}},
				{"store 1, 2, 5", func(l *Ledger) ([]Range, []Range) {
					l.Stored(Range{1, 2})
					l.Stored(Range{5, 5})
					return nil, nil
				}},
				{"3 comes back", func(l *Ledger) ([]Range, []Range) { l.Delivered(3, 0); return nil, nil }},
			},
			wantFloor: 2, wantHoles: []Range{{4, 4}},
		},
		{
			name:  "a hole delivered while the walk ran is not marked",
			floor: 0, firstSeq: 1, delivered: 0,
			steps: []step{
				{"deliver 1, 4", func(l *Ledger) ([]Range, []Range) {
					l.Delivered(1, 0)
					l.Delivered(4, 0)
					return nil, nil
				}},
				{"3 arrives", func(l *Ledger) ([]Range, []Range) { l.Delivered(3, 0); return nil, nil }},
				{"the walk saw 2 and 3 gone", func(l *Ledger) ([]Range, []Range) {
					return walked(l, []Range{{2, 3}}, nil)
				}},
			},
			wantLost: []Range{{2, 2}}, wantMarking: []Range{{2, 2}},
		},
		{
			name:  "a filtered consumer's jump right after a delivery is other subjects",
			floor: 2, firstSeq: 1, delivered: 2, filtered: true,
			steps: []step{
				{"deliver 3, then 9 right after it", func(l *Ledger) ([]Range, []Range) {
					l.Delivered(3, 0)
					l.Delivered(9, 3)
					return nil, nil
				}},
				{"store 3", func(l *Ledger) ([]Range, []Range) {
					l.Stored(Range{3, 3})
					return nil, nil
				}},
			},
			wantFloor: 8,
		},
		{
			// A consumer moved back delivers again from below, and what it
			// sent before the move may still arrive: a jump past the
			// frontier that follows no delivery vouches for nothing.
			name:  "a filtered consumer's jump that follows no delivery leaves holes",
			floor: 2, firstSeq: 1, delivered: 2, filtered: true,
			steps: []step{
				{"deliver 3, then 9 out of order", func(l *Ledger) ([]Range, []Range) {
					l.Delivered(3, 0)
					l.Delivered(9, 0)
					return nil, nil
				}},
				{"store 3", func(l *Ledger) ([]Range, []Range) {
					l.Stored(Range{3, 3})
					return nil, nil
				}},
			},
			wantFloor: 3, wantHoles: []Range{{4, 8}},
		},
		{
			name:  "a jump right after a delivery passes an unresolved intent's sequences without taking them for done",
			floor: 2, firstSeq: 1, delivered: 2, filtered: true,
			steps: []step{
				{"5 waits; deliver 3, then 9 right after it", func(l *Ledger) ([]Range, []Range) {
					l.Wait(Range{5, 5})
					l.Delivered(3, 0)
					l.Delivered(9, 3)
					return nil, nil
				}},
				{"store 3; 5 was never stored", func(l *Ledger) ([]Range, []Range) {
					l.Stored(Range{3, 3})
					l.Returned(5)
					return nil, nil
				}},
			},
			wantFloor: 4, wantHoles: []Range{{5, 5}},
		},
		{
			name:  "a filtered consumer names removed head ranges and takes other gone holes for other subjects",
			floor: 10, firstSeq: 50, delivered: 60, filtered: true,
			steps: []step{
				{"walk", func(l *Ledger) ([]Range, []Range) {
					return walked(l, []Range{{11, 60}}, []uint64{55})
				}},
			},
			wantFloor: 10, wantHoles: []Range{{55, 55}},
			wantHeadLost: []Range{{11, 49}}, wantMarking: []Range{{11, 49}},
		},
		{
			name:  "what the record says is done above the floor is not a hole",
			floor: 10, done: []Range{{15, 20}, {11, 12}}, firstSeq: 1, delivered: 30,
			wantFloor: 12, wantHoles: []Range{{13, 14}, {21, 30}},
		},
		{
			name:  "a batch not stored makes holes of its messages; an unresolved intent's are no holes",
			floor: 0, firstSeq: 1, delivered: 0,
			steps: []step{
				{"deliver 1-4", func(l *Ledger) ([]Range, []Range) {
					for q := uint64(1); q <= 4; q++ {
						l.Delivered(q, 0)
					}
					return nil, nil
				}},
				{"1 and 2 not stored, 3 and 4 unsure", func(l *Ledger) ([]Range, []Range) {
					for q := uint64(1); q <= 4; q++ {
						l.Returned(q)
					}
					l.Wait(Range{3, 4})
					return nil, nil
				}},
			},
			wantHoles: []Range{{1, 2}},
		},
		{
			name:  "the first sequence moving past the frontier makes head holes",
			floor: 5, firstSeq: 1, delivered: 5,
			steps: []step{
				{"reach", func(l *Ledger) ([]Range, []Range) { l.Reach(99, true); return nil, nil }},
			},
			wantFloor: 5, wantHoles: []Range{{6, 99}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLedger(tt.floor, tt.done, tt.firstSeq, tt.delivered, tt.filtered)
			var lost, headLost []Range
			for _, st := range tt.steps {
				lost, headLost = st.do(l)
			}
			if l.Floor() != tt.wantFloor {
				t.Errorf("floor %d, want %d", l.Floor(), tt.wantFloor)
			}
			if !slices.Equal(l.Holes(), tt.wantHoles) {
				t.Errorf("holes %v, want %v", l.Holes(), tt.wantHoles)
			}
			if !slices.Equal(lost, tt.wantLost) || !slices.Equal(headLost, tt.wantHeadLost) {
				t.Errorf("lost %v and head lost %v, want %v and %v", lost, headLost, tt.wantLost, tt.wantHeadLost)
			}
			if !slices.Equal(l.marking.Runs(), tt.wantMarking) {
				t.Errorf("marking %v, want %v", l.marking.Runs(), tt.wantMarking)
			}
			// Holes, marking and done never overlap, and nothing of them is
			// at or below the floor.
			for _, r := range append(append(slices.Clone(l.Holes()), l.marking.Runs()...), l.Done()...) {
				if r.First <= l.Floor() {
					t.Errorf("range %v at or below the floor %d", r, l.Floor())
				}
			}
			for _, r := range l.Holes() {
				if len(l.marking.Within(r)) > 0 || len(l.done.Within(r)) > 0 {
					t.Errorf("hole %v is also marking or done", r)
				}
			}
		})
	}
}

func TestLedgerAccounted(t *testing.T) {
	l := NewLedger(10, []Range{{20, 25}}, 1, 30, false)
	l.Walked([]Range{{11, 19}}, []uint64{15})
	for q, want := range map[uint64]bool{1: true, 10: true, 11: true, 15: false, 19: true, 20: true, 26: false, 31: false} {
		if got := l.Accounted(q); got != want {
			t.Errorf("accounted(%d) = %v, want %v", q, got, want)
		}
	}
}

// BenchmarkLedgerStoresOutOfOrder stores 100,000 batches of one sequence in
// a random order, as 100,000 subjects of one message each are flushed, and
// looks every sequence up once more, as redeliveries would.
func BenchmarkLedgerStoresOutOfOrder(b *testing.B) {
	const n = 100_000
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for b.Loop() {
		l := NewLedger(0, nil, 1, 0, false)
		for q := uint64(1); q <= n; q++ {
			l.Delivered(q, 0)
		}
		for _, i := range order {
			l.Stored(Range{uint64(i) + 1, uint64(i) + 1})
		}
		for q := uint64(1); q <= n; q++ {
			if !l.Accounted(q) {
				b.Fatalf("sequence %d not accounted", q)
			}
		}
		if l.Floor() != n {
			b.Fatalf("floor %d", l.Floor())
		}
	}
}

// A state-bucket value that is no export record is reported as such, and
// the next write replaces it.
// A stored record that claims sequences past the stream's last one was not
// written by jetlake: a write replaces it instead of taking its floor,
// and says so. One that claims more than the writer but no more than the
// stream holds (another instance ahead of this one) is merged.

// A filtered consumer on a work-queue or interest stream, started with
// holes below the stream's first sequence in several ranges: Retain takes
// every head hole back, so a walk that finds them gone names no loss (the
// first sequence moved for other consumers' acks). Retain emptied the head
// with RemoveAll of its own ranges, which it changed as it went: all but
// the first range of every pair stayed, and were named lost.
func TestRetainTakesBackEveryHeadHole(t *testing.T) {
	l := NewLedger(0, []Range{{2, 2}, {4, 4}, {6, 6}}, 9, 0, true)
	l.Retain()
	lost, headLost := walked(l, l.ToWalk(100), nil)
	if len(lost)+len(headLost) != 0 {
		t.Fatalf("lost %v, head lost %v; want none", lost, headLost)
	}
	if l.Floor() != 8 {
		t.Fatalf("floor %d, want 8: the gone holes were other subjects'", l.Floor())
	}
}

// walked runs l.Walked and returns the ranges it names lost as Ranges.
func walked(l *Ledger, scanned []Range, existing []uint64) (lost, headLost []Range) {
	ml, mh := l.Walked(scanned, existing)
	return MarkerRanges(ml), MarkerRanges(mh)
}
