package lake

import (
	"reflect"
	"testing"

	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/lossmarker"
)

func TestWithoutExportedKeepsOnlyWhatNoObjectHolds(t *testing.T) {
	data := []objectRuns{{key: "a", runs: []progress.Range{{First: 1, Last: 10}}}, {key: "b", runs: []progress.Range{{First: 21, Last: 25}, {First: 28, Last: 30}}}}
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
		{"ranges split", lossmarker.Marker{FirstSeq: 20, LastSeq: 31, Count: 8, Ranges: []lossmarker.Range{{First: 20, Last: 23}, {First: 26, Last: 29}, {First: 31, Last: 31}}},
			[]lossmarker.Marker{{FirstSeq: 20, LastSeq: 31, Count: 4, Ranges: []lossmarker.Range{{First: 20, Last: 20}, {First: 26, Last: 27}, {First: 31, Last: 31}}}}, 5},
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
