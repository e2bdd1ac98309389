package exporter

import (
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
