package lossmarker_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/jetlake/jetlake/lossmarker"
)

// A marker's ranges are strings in its JSON: "first-last", or "first" for
// one sequence, and read back as they were written.
func TestARangeIsWrittenAndReadInTheMarkersTextForm(t *testing.T) {
	tests := []struct {
		r    lossmarker.Range
		text string
	}{
		{lossmarker.Range{First: 7, Last: 7}, `"7"`},
		{lossmarker.Range{First: 2, Last: 1000001}, `"2-1000001"`},
		{lossmarker.Range{First: 1, Last: math.MaxUint64}, `"1-18446744073709551615"`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.r)
		if err != nil || string(b) != tt.text {
			t.Errorf("json.Marshal(%+v) = %s, %v; want %s", tt.r, b, err, tt.text)
		}
		var back lossmarker.Range
		if err := json.Unmarshal(b, &back); err != nil || back != tt.r {
			t.Errorf("json.Unmarshal(%s) = %+v, %v; want %+v", b, back, err, tt.r)
		}
	}
	for _, bad := range []string{`""`, `"x"`, `"1-"`, `"-1"`, `"1-2-3"`} {
		var r lossmarker.Range
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("json.Unmarshal(%s) = %+v, want an error", bad, r)
		}
	}
}
