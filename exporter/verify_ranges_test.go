package exporter

import (
	"slices"
	"testing"

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
	rs := markedRanges(markers)
	if want := (ranges{{1, 4}, {50, 70}, {300_000_000, 300_000_000}}); len(rs) != len(want) || rs[0] != want[0] || rs[1] != want[1] || rs[2] != want[2] {
		t.Fatalf("markedRanges = %v, want %v", rs, want)
	}
	tests := []struct {
		seq  uint64
		want bool
	}{
		{0, false}, {1, true}, {4, true}, {5, false}, {49, false}, {50, true},
		{70, true}, {71, false}, {299_999_999, false}, {300_000_000, true}, {300_000_001, false},
	}
	for _, tt := range tests {
		if got := rs.has(tt.seq); got != tt.want {
			t.Errorf("has(%d) = %v, want %v", tt.seq, got, tt.want)
		}
	}
	if markedRanges(nil).has(1) {
		t.Error("no markers: has(1) = true")
	}
}

func TestMarkedRangesNamesOnlyAMarkersRanges(t *testing.T) {
	markers := []*lossmarker.Marker{
		{FirstSeq: 10, LastSeq: 30, Count: 6, Ranges: []lossmarker.Range{{10, 12}, {20, 20}, {29, 30}}},
		{FirstSeq: 21, LastSeq: 21}, // joins 20
		{FirstSeq: 1, LastSeq: 300_000_000},
	}
	if got, want := markedRanges(markers[:2]), (ranges{{10, 12}, {20, 21}, {29, 30}}); !slices.Equal(got, want) {
		t.Errorf("markedRanges = %v, want %v", got, want)
	}
	if got, want := markedRanges(markers), (ranges{{1, 300_000_000}}); !slices.Equal(got, want) {
		t.Errorf("markedRanges with a wide marker = %v, want %v", got, want)
	}
}

func TestToRanges(t *testing.T) {
	tests := []struct {
		seqs []uint64
		want []Range
	}{
		{nil, nil},
		{[]uint64{7}, []Range{{7, 7}}},
		{[]uint64{1, 2, 3, 5, 8, 9}, []Range{{1, 3}, {5, 5}, {8, 9}}},
		// A repeated sequence starts a range that overlaps the one before.
		{[]uint64{1, 2, 2, 3}, []Range{{1, 2}, {2, 3}}},
		{[]uint64{4, 4, 4}, []Range{{4, 4}, {4, 4}, {4, 4}}},
	}
	for _, tt := range tests {
		if got := toRanges(tt.seqs); !slices.Equal(got, tt.want) {
			t.Errorf("toRanges(%v) = %v, want %v", tt.seqs, got, tt.want)
		}
	}
}
