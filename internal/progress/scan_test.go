package progress

import (
	"slices"
	"testing"
)

func TestScanSplitsHolesByWhatAReadCovered(t *testing.T) {
	holes := []Range{{1, 3}, {5, 9}, {12, 14}}
	for _, tt := range []struct {
		name         string
		seqs         []uint64
		read         uint64
		full         bool
		wantScanned  []Range
		wantExisting []uint64
		wantRest     []Range
	}{
		{"nothing read", nil, 0, false, nil, nil, holes},
		{"all read, nothing there", nil, 14, false, holes, nil, nil},
		{"all read, some there", []uint64{2, 4, 6, 13}, 14, false, holes, []uint64{2, 6, 13}, nil},
		{"read into a hole", []uint64{2, 6}, 6, false, []Range{{1, 3}, {5, 6}}, []uint64{2, 6}, []Range{{7, 9}, {12, 14}}},
		{"a full read leaves the rest for a later walk", []uint64{2, 6}, 6, true, []Range{{1, 3}, {5, 6}}, []uint64{2, 6}, nil},
		{"read between holes", []uint64{2}, 4, false, []Range{{1, 3}}, []uint64{2}, []Range{{5, 9}, {12, 14}}},
	} {
		scanned, existing, rest := Scan(holes, tt.seqs, tt.read, tt.full)
		if !slices.Equal(scanned, tt.wantScanned) || !slices.Equal(existing, tt.wantExisting) || !slices.Equal(rest, tt.wantRest) {
			t.Errorf("%s: scanned %v, existing %v, rest %v; want %v, %v, %v", tt.name, scanned, existing, rest, tt.wantScanned, tt.wantExisting, tt.wantRest)
		}
	}
}
