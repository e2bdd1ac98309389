package exporter

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSeqSetRoundTrips(t *testing.T) {
	for _, seqs := range [][]uint64{
		nil,
		{1},
		{5, 3, 4, 4, 10},
		{1, 11, 21, 31},
		{1<<63 + 5, 1<<63 + 6, 1 << 40},
	} {
		set := newSeqSet(seqs)
		data, err := json.Marshal(set)
		if err != nil {
			t.Fatal(err)
		}
		var back seqSet
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%v: %v", seqs, err)
		}
		var got []uint64
		back.All(func(q uint64) { got = append(got, q) })
		want := slices.Compact(slices.Sorted(slices.Values(seqs)))
		if !slices.Equal(got, want) || back.Len() != len(want) {
			t.Fatalf("%v: round trip gave %v (len %d)", seqs, got, back.Len())
		}
	}
}

func TestSeqSetOfAStridedBatchIsSmall(t *testing.T) {
	// One subject among ten: every tenth sequence.
	var seqs []uint64
	for q := uint64(1_000_000); len(seqs) < 10000; q += 10 {
		seqs = append(seqs, q)
	}
	data, _ := json.Marshal(newSeqSet(seqs))
	if per := float64(len(data)) / float64(len(seqs)); per > 3 {
		t.Fatalf("%.1f bytes a sequence, want at most 3", per)
	}
}

func FuzzSeqSetUnmarshal(f *testing.F) {
	f.Add([]byte(`"AQI="`))
	f.Add([]byte(`""`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s seqSet
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		// Whatever decodes is sorted, disjoint and re-encodes to itself.
		var prev uint64
		for i, r := range s.runs {
			if r[1] < r[0] || i > 0 && r[0] <= prev+1 {
				t.Fatalf("runs out of order: %v", s.runs)
			}
			prev = r[1]
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back seqSet
		if err := json.Unmarshal(again, &back); err != nil || !slices.Equal(back.runs, s.runs) {
			t.Fatalf("re-encoding changed %v to %v (%v)", s.runs, back.runs, err)
		}
	})
}
