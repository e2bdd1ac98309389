package lossmarker_test

import (
	"strings"
	"testing"

	"github.com/jetlake/jetlake/lossmarker"
)

// Gone sequences get one marker a MaxRanges ranges, each saying how many
// sequences it names, between which, and why.
func TestGapsNameEveryLostSequenceInMarkersOfBoundedSize(t *testing.T) {
	if got := lossmarker.Gaps("S", "c", nil, "purged"); len(got) != 0 {
		t.Fatalf("%d markers of nothing", len(got))
	}
	one := lossmarker.Gaps("S", "c", []lossmarker.Range{{First: 5, Last: 9}}, "purged")
	if len(one) != 1 || one[0].Count != 5 || one[0].FirstSeq != 5 || one[0].LastSeq != 9 || len(one[0].Ranges) != 0 ||
		one[0].Reason != lossmarker.Gap || one[0].Stream != "S" || one[0].Consumer != "c" || one[0].Error != "purged: 5 sequences from 5 to 9" {
		t.Fatalf("one range: %+v", one)
	}
	var lost []lossmarker.Range
	for i := range uint64(lossmarker.MaxRanges + 3) {
		lost = append(lost, lossmarker.Range{First: 10 + 3*i, Last: 11 + 3*i})
	}
	many := lossmarker.Gaps("S", "c", lost, "removed")
	if len(many) != 2 || len(many[0].Ranges) != lossmarker.MaxRanges || len(many[1].Ranges) != 3 {
		t.Fatalf("%d markers for %d ranges", len(many), len(lost))
	}
	var count uint64
	for _, m := range many {
		count += m.Count
		if !strings.HasPrefix(m.Error, "removed: ") || m.FirstSeq != m.Ranges[0].First || m.LastSeq != m.Ranges[len(m.Ranges)-1].Last {
			t.Fatalf("marker %s: %d to %d, ranges %v…", m.Error, m.FirstSeq, m.LastSeq, m.Ranges[0])
		}
	}
	if count != 2*uint64(len(lost)) {
		t.Fatalf("the markers name %d sequences, want %d", count, 2*len(lost))
	}
}
