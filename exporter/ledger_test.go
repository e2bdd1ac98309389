package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestLedger(t *testing.T) {
	type step struct {
		name string
		do   func(l *ledger) (lost, headLost []Range)
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
			steps: []step{{"walk finds nothing", func(l *ledger) ([]Range, []Range) {
				return l.walked([]Range{{401, 299_999_999}}, nil)
			}}},
			wantFloor: 400, wantLost: []Range{{401, 299_999_999}}, wantMarking: []Range{{401, 299_999_999}},
		},
		{
			name:  "the marker stored moves the floor over the lost range",
			floor: 400, firstSeq: 1001, delivered: 1000,
			steps: []step{
				{"walk", func(l *ledger) ([]Range, []Range) { return l.walked([]Range{{401, 1000}}, nil) }},
				{"marker stored", func(l *ledger) ([]Range, []Range) { l.marked(Range{401, 1000}); return nil, nil }},
			},
			wantFloor: 1000,
		},
		{
			name:  "a marker not stored makes its range holes again",
			floor: 400, firstSeq: 1001, delivered: 1000,
			steps: []step{
				{"walk", func(l *ledger) ([]Range, []Range) { return l.walked([]Range{{401, 1000}}, nil) }},
				{"marker failed", func(l *ledger) ([]Range, []Range) { l.unmarked(Range{401, 1000}); return nil, nil }},
			},
			wantFloor: 400, wantHoles: []Range{{401, 1000}},
		},
		{
			name:  "messages the stream still holds stay holes until they come back",
			floor: 10, firstSeq: 1, delivered: 20,
			steps: []step{
				{"walk", func(l *ledger) ([]Range, []Range) { return l.walked([]Range{{11, 20}}, []uint64{12, 15}) }},
			},
			wantFloor: 10, wantHoles: []Range{{12, 12}, {15, 15}},
			wantLost:    []Range{{11, 11}, {13, 14}, {16, 20}},
			wantMarking: []Range{{11, 11}, {13, 14}, {16, 20}},
		},
		{
			name:  "a jump in deliveries makes holes; the skipped message coming back fills its hole",
			floor: 0, firstSeq: 1, delivered: 0,
			steps: []step{
				{"deliver 1, 2, 5", func(l *ledger) ([]Range, []Range) {
					l.delivered(1)
					l.delivered(2)
					l.delivered(5)
					return nil, nil
				}},
				{"store 1, 2, 5", func(l *ledger) ([]Range, []Range) {
					l.stored(Range{1, 2})
					l.stored(Range{5, 5})
					return nil, nil
				}},
				{"3 comes back", func(l *ledger) ([]Range, []Range) { l.delivered(3); return nil, nil }},
			},
			wantFloor: 2, wantHoles: []Range{{4, 4}},
		},
		{
			name:  "a hole delivered while the walk ran is not marked",
			floor: 0, firstSeq: 1, delivered: 0,
			steps: []step{
				{"deliver 1, 4", func(l *ledger) ([]Range, []Range) { l.delivered(1); l.delivered(4); return nil, nil }},
				{"3 arrives", func(l *ledger) ([]Range, []Range) { l.delivered(3); return nil, nil }},
				{"the walk saw 2 and 3 gone", func(l *ledger) ([]Range, []Range) { return l.walked([]Range{{2, 3}}, nil) }},
			},
			wantLost: []Range{{2, 2}}, wantMarking: []Range{{2, 2}},
		},
		{
			name:  "a filtered consumer's jumps are other subjects",
			floor: 0, firstSeq: 1, delivered: 0, filtered: true,
			steps: []step{
				{"deliver 3, 9", func(l *ledger) ([]Range, []Range) { l.delivered(3); l.delivered(9); return nil, nil }},
				{"store 3", func(l *ledger) ([]Range, []Range) { l.stored(Range{3, 3}); return nil, nil }},
			},
			wantFloor: 8,
		},
		{
			name:  "a filtered consumer names removed head ranges and takes other gone holes for other subjects",
			floor: 10, firstSeq: 50, delivered: 60, filtered: true,
			steps: []step{
				{"walk", func(l *ledger) ([]Range, []Range) { return l.walked([]Range{{11, 60}}, []uint64{55}) }},
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
				{"deliver 1-4", func(l *ledger) ([]Range, []Range) {
					for q := uint64(1); q <= 4; q++ {
						l.delivered(q)
					}
					return nil, nil
				}},
				{"1 and 2 not stored, 3 and 4 unsure", func(l *ledger) ([]Range, []Range) {
					for q := uint64(1); q <= 4; q++ {
						l.returned(q)
					}
					l.wait(Range{3, 4})
					return nil, nil
				}},
			},
			wantHoles: []Range{{1, 2}},
		},
		{
			name:  "the first sequence moving past the frontier makes head holes",
			floor: 5, firstSeq: 1, delivered: 5,
			steps: []step{
				{"reach", func(l *ledger) ([]Range, []Range) { l.reach(99, true); return nil, nil }},
			},
			wantFloor: 5, wantHoles: []Range{{6, 99}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger(tt.floor, tt.done, tt.firstSeq, tt.delivered, tt.filtered)
			var lost, headLost []Range
			for _, st := range tt.steps {
				lost, headLost = st.do(l)
			}
			if l.floor != tt.wantFloor {
				t.Errorf("floor %d, want %d", l.floor, tt.wantFloor)
			}
			if !slices.Equal(l.holes.runs(), tt.wantHoles) {
				t.Errorf("holes %v, want %v", l.holes.runs(), tt.wantHoles)
			}
			if !slices.Equal(lost, tt.wantLost) || !slices.Equal(headLost, tt.wantHeadLost) {
				t.Errorf("lost %v and head lost %v, want %v and %v", lost, headLost, tt.wantLost, tt.wantHeadLost)
			}
			if !slices.Equal(l.marking.runs(), tt.wantMarking) {
				t.Errorf("marking %v, want %v", l.marking.runs(), tt.wantMarking)
			}
			// Holes, marking and done never overlap, and nothing of them is
			// at or below the floor.
			for _, r := range append(append(slices.Clone(l.holes.runs()), l.marking.runs()...), l.done.runs()...) {
				if r.First <= l.floor {
					t.Errorf("range %v at or below the floor %d", r, l.floor)
				}
			}
			for _, r := range l.holes.runs() {
				if len(l.marking.within(r)) > 0 || len(l.done.within(r)) > 0 {
					t.Errorf("hole %v is also marking or done", r)
				}
			}
		})
	}
}

func TestLedgerAccounted(t *testing.T) {
	l := newLedger(10, []Range{{20, 25}}, 1, 30, false)
	l.walked([]Range{{11, 19}}, []uint64{15})
	for q, want := range map[uint64]bool{1: true, 10: true, 11: true, 15: false, 19: true, 20: true, 26: false, 31: false} {
		if got := l.accounted(q); got != want {
			t.Errorf("accounted(%d) = %v, want %v", q, got, want)
		}
	}
}

func TestMergeRecordsKeepsWhatEitherSaysIsExported(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a := exportRecord{StreamCreated: created, Floor: 100, Done: rangesToSeqSet([]Range{{150, 160}, {300, 300}})}
	b := exportRecord{StreamCreated: created, Floor: 149, Done: rangesToSeqSet([]Range{{200, 250}})}
	got := mergeRecords(a, b)
	if got.Floor != 160 {
		t.Errorf("floor %d, want 160", got.Floor)
	}
	want := [][2]uint64{{200, 250}, {300, 300}}
	if !slices.Equal(got.Done.runs, want) {
		t.Errorf("done %v, want %v", got.Done.runs, want)
	}
	// The record round-trips through JSON.
	body, err := json.Marshal(&got)
	if err != nil {
		t.Fatal(err)
	}
	var back exportRecord
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	if back.Floor != got.Floor || !slices.Equal(back.Done.runs, want) || !back.StreamCreated.Equal(created) {
		t.Errorf("decoded %+v from %s", back, body)
	}
}

// BenchmarkLedgerStoresOutOfOrder stores 100,000 batches of one sequence in
// a random order, as 100,000 subjects of one message each are flushed, and
// looks every sequence up once more, as redeliveries would.
func BenchmarkLedgerStoresOutOfOrder(b *testing.B) {
	const n = 100_000
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for b.Loop() {
		l := newLedger(0, nil, 1, 0, false)
		for q := uint64(1); q <= n; q++ {
			l.delivered(q)
		}
		for _, i := range order {
			l.stored(Range{uint64(i) + 1, uint64(i) + 1})
		}
		for q := uint64(1); q <= n; q++ {
			if !l.accounted(q) {
				b.Fatalf("sequence %d not accounted", q)
			}
		}
		if l.floor != n {
			b.Fatalf("floor %d", l.floor)
		}
	}
}

// A state-bucket value that is no export record is reported as such, and
// the next write replaces it.
func TestAnUnreadableRecordIsReplaced(t *testing.T) {
	st := &memIntents{m: map[string][]byte{}}
	ctx := t.Context()
	if _, err := st.Update(ctx, "export.k", []byte("not json"), 0); err != nil {
		t.Fatal(err)
	}
	var bad *unreadableRecordError
	if _, _, err := loadRecord(ctx, st, "export.k"); !errors.As(err, &bad) {
		t.Fatalf("loadRecord: %v, want an unreadable record", err)
	}
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	floor, _, err := saveRecord(ctx, st, "export.k", exportRecord{StreamCreated: created, Floor: 42}, lastSeqIs(100))
	if err != nil || floor != 42 {
		t.Fatalf("saveRecord = %d, %v", floor, err)
	}
	rec, _, err := loadRecord(ctx, st, "export.k")
	if err != nil || rec.Floor != 42 {
		t.Fatalf("loadRecord = %+v, %v", rec, err)
	}
}

func lastSeqIs(q uint64) lastSeqFunc {
	return func(context.Context) (uint64, error) { return q, nil }
}

// A stored record that claims sequences past the stream's last one was not
// written by jetlake: a write replaces it instead of taking its floor,
// and says so. One that claims more than the writer but no more than the
// stream holds (another instance ahead of this one) is merged.
func TestASavedRecordDoesNotTakeAFloorPastTheStream(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name          string
		stored        exportRecord
		wantFloor     uint64
		wantUntrusted bool
	}{
		{"forged floor", exportRecord{StreamCreated: created, Floor: 1_000_000_000_000}, 42, true},
		{"forged done", exportRecord{StreamCreated: created, Floor: 10, Done: newSeqSet([]uint64{500})}, 42, true},
		{"another instance ahead", exportRecord{StreamCreated: created, Floor: 90}, 90, false},
		{"behind", exportRecord{StreamCreated: created, Floor: 7}, 42, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &memIntents{m: map[string][]byte{}}
			ctx := t.Context()
			value, _ := json.Marshal(&tt.stored)
			if _, err := st.Update(ctx, "export.k", value, 0); err != nil {
				t.Fatal(err)
			}
			floor, untrusted, err := saveRecord(ctx, st, "export.k", exportRecord{StreamCreated: created, Floor: 42}, lastSeqIs(100))
			if err != nil || floor != tt.wantFloor || (untrusted != nil) != tt.wantUntrusted {
				t.Fatalf("saveRecord = %d, %v, %v; want floor %d, untrusted %v", floor, untrusted, err, tt.wantFloor, tt.wantUntrusted)
			}
			rec, _, err := loadRecord(ctx, st, "export.k")
			if err != nil || rec.claims() != tt.wantFloor {
				t.Fatalf("stored record = %+v, %v; want it to claim %d", rec, err, tt.wantFloor)
			}
		})
	}
}
