package lake

import (
	"slices"
	"testing"

	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/lossmarker"
)

func TestMarkedRangesFindsEverySequenceOfEveryMarker(t *testing.T) {
	markers := []*lossmarker.Marker{
		{FirstSeq: 50, LastSeq: 60},
		{FirstSeq: 1, LastSeq: 3},
		{FirstSeq: 4, LastSeq: 4},   // joins 1-3
		{FirstSeq: 55, LastSeq: 70}, // overlaps 50-60
		{FirstSeq: 300_000_000, LastSeq: 300_000_000},
	}
	var rs progress.Set
	rs.AddAll(markedRanges(markers))
	runs := rs.Runs()
	if want := ([]progress.Range{{First: 1, Last: 4}, {First: 50, Last: 70}, {First: 300_000_000, Last: 300_000_000}}); !slices.Equal(runs, want) {
		t.Fatalf("markedRanges = %v, want %v", runs, want)
	}
	tests := []struct {
		seq  uint64
		want bool
	}{
		{0, false}, {1, true}, {4, true}, {5, false}, {49, false}, {50, true},
		{70, true}, {71, false}, {299_999_999, false}, {300_000_000, true}, {300_000_001, false},
	}
	for _, tt := range tests {
		if got := rs.Has(tt.seq); got != tt.want {
			t.Errorf("has(%d) = %v, want %v", tt.seq, got, tt.want)
		}
	}
	if got := markedRanges(nil); len(got) != 0 {
		t.Errorf("no markers: %v", got)
	}
}

func TestMarkedRangesNamesOnlyAMarkersRanges(t *testing.T) {
	markers := []*lossmarker.Marker{
		{FirstSeq: 10, LastSeq: 30, Count: 6, Ranges: []lossmarker.Range{{First: 10, Last: 12}, {First: 20, Last: 20}, {First: 29, Last: 30}}},
		{FirstSeq: 21, LastSeq: 21}, // joins 20
		{FirstSeq: 1, LastSeq: 300_000_000},
	}
	if got, want := markedRanges(markers[:2]), ([]progress.Range{{First: 10, Last: 12}, {First: 20, Last: 21}, {First: 29, Last: 30}}); !slices.Equal(got, want) {
		t.Errorf("markedRanges = %v, want %v", got, want)
	}
	if got, want := markedRanges(markers), ([]progress.Range{{First: 1, Last: 300_000_000}}); !slices.Equal(got, want) {
		t.Errorf("markedRanges with a wide marker = %v, want %v", got, want)
	}
}

func TestToRanges(t *testing.T) {
	tests := []struct {
		seqs []uint64
		want []progress.Range
	}{
		{nil, nil},
		{[]uint64{7}, []progress.Range{{First: 7, Last: 7}}},
		{[]uint64{1, 2, 3, 5, 8, 9}, []progress.Range{{First: 1, Last: 3}, {First: 5, Last: 5}, {First: 8, Last: 9}}},
		// A repeated sequence starts a range that overlaps the one before.
		{[]uint64{1, 2, 2, 3}, []progress.Range{{First: 1, Last: 2}, {First: 2, Last: 3}}},
		{[]uint64{4, 4, 4}, []progress.Range{{First: 4, Last: 4}, {First: 4, Last: 4}, {First: 4, Last: 4}}},
	}
	for _, tt := range tests {
		if got := progress.FromSorted(tt.seqs); !slices.Equal(got, tt.want) {
			t.Errorf("progress.FromSorted(%v) = %v, want %v", tt.seqs, got, tt.want)
		}
	}
}
