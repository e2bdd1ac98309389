package pathtemplate

import (
	"math"
	"strconv"
	"testing"
)

func TestAppendIntWritesAnyInt(t *testing.T) {
	tests := []struct {
		v, width int
		want     string
	}{
		{0, 1, "0"},
		{0, 4, "0000"},
		{7, 2, "07"},
		{2026, 4, "2026"},
		{12345, 4, "12345"},
		{-1, 1, "-1"},
		{-1, 4, "-0001"},
		{-1221, 4, "-1221"},
		{-10, 2, "-10"},
		{math.MaxInt64, 4, strconv.Itoa(math.MaxInt64)},
		{math.MinInt64, 4, strconv.Itoa(math.MinInt64)},
		{math.MinInt64 + 1, 20, "-0" + strconv.Itoa(math.MaxInt64)},
	}
	for _, tt := range tests {
		if got := string(appendInt([]byte("x"), tt.v, tt.width)); got != "x"+tt.want {
			t.Errorf("appendInt(%d, %d) = %q, want %q", tt.v, tt.width, got, "x"+tt.want)
		}
	}
}
