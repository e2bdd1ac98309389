package progress

import (
	"encoding/json"
	"slices"
	"testing"
)

func FuzzSeqsUnmarshal(f *testing.F) {
	f.Add([]byte(`"AQI="`))
	f.Add([]byte(`""`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Seqs
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		// Whatever decodes is sorted, disjoint and re-encodes to itself.
		var prev uint64
		for i, r := range s.rs {
			if r.Last < r.First || i > 0 && r.First <= prev+1 {
				t.Fatalf("runs out of order: %v", s.rs)
			}
			prev = r.Last
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Seqs
		if err := json.Unmarshal(again, &back); err != nil || !slices.Equal(back.rs, s.rs) {
			t.Fatalf("re-encoding changed %v to %v (%v)", s.rs, back.rs, err)
		}
	})
}

// Sequences in arrival order make the same set as sorted ones, whether
// they come in order, with gaps, with redeliveries out of order, or
// repeated.
func TestSeqsInOrderIsTheSetOfItsSequences(t *testing.T) {
	for _, seqs := range [][]uint64{
		nil,
		{7},
		{1, 2, 3, 4},
		{1, 2, 5, 6, 9},
		{5, 6, 1, 2, 3},
		{3, 3, 4},
		{10, 9, 8},
	} {
		got := SeqsInOrder(len(seqs), func(i int) uint64 { return seqs[i] })
		want := NewSeqs(seqs)
		if !slices.Equal(got.Ranges(), want.Ranges()) {
			t.Errorf("%v: %v, want %v", seqs, got.Ranges(), want.Ranges())
		}
	}
}
