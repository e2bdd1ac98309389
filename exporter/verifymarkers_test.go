package exporter

import (
	"reflect"
	"testing"

	"github.com/jetlake/jetlake/lossmarker"
)

func TestWithoutExportedKeepsOnlyWhatNoObjectHolds(t *testing.T) {
	data := []objectRuns{{key: "a", runs: []Range{{1, 10}}}, {key: "b", runs: []Range{{21, 25}, {28, 30}}}}
	for _, tc := range []struct {
		name  string
		in    lossmarker.Marker
		want  []lossmarker.Marker
		taken uint64
	}{
		{"none stored", lossmarker.Marker{FirstSeq: 11, LastSeq: 20, Count: 10},
			[]lossmarker.Marker{{FirstSeq: 11, LastSeq: 20, Count: 10}}, 0},
		{"all stored", lossmarker.Marker{FirstSeq: 2, LastSeq: 5, Count: 4}, nil, 4},
		{"part stored", lossmarker.Marker{FirstSeq: 5, LastSeq: 15, Count: 11},
			[]lossmarker.Marker{{FirstSeq: 11, LastSeq: 15, Count: 5}}, 6},
		{"ranges split", lossmarker.Marker{FirstSeq: 20, LastSeq: 31, Count: 8, Ranges: []lossmarker.Range{{20, 23}, {26, 29}, {31, 31}}},
			[]lossmarker.Marker{{FirstSeq: 20, LastSeq: 31, Count: 4, Ranges: []lossmarker.Range{{20, 20}, {26, 27}, {31, 31}}}}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.in
			got, taken := withoutExported([]*lossmarker.Marker{&m}, data)
			var vals []lossmarker.Marker
			for _, g := range got {
				vals = append(vals, *g)
			}
			if !reflect.DeepEqual(vals, tc.want) || taken != tc.taken {
				t.Fatalf("got %+v, %d taken; want %+v, %d", vals, taken, tc.want, tc.taken)
			}
		})
	}
}
