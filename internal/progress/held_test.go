package progress

import (
	"math/rand/v2"
	"testing"
)

func TestHeldSetAgreesWithAMap(t *testing.T) {
	var h Held
	ref := map[uint64]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		// Sequences around a moving point, as deliveries are, with some
		// far away, as a quiet subject's are.
		seq := uint64(r.IntN(300_000))
		if r.IntN(100) == 0 {
			seq = 1<<40 + uint64(r.IntN(10))
		}
		if r.IntN(2) == 0 {
			h.Add(seq)
			ref[seq] = true
		} else {
			h.Remove(seq)
			delete(ref, seq)
		}
		probe := uint64(r.IntN(300_000))
		if h.Has(probe) != ref[probe] {
			t.Fatalf("has(%d) = %v, want %v", probe, h.Has(probe), ref[probe])
		}
		if h.Len() != len(ref) {
			t.Fatalf("len = %d, want %d", h.Len(), len(ref))
		}
	}
	for seq := range ref {
		h.Remove(seq)
	}
	if h.Len() != 0 || len(h.pages) != 0 {
		t.Fatalf("after removing everything: len %d, %d pages", h.Len(), len(h.pages))
	}
}

func TestHeldSetEdges(t *testing.T) {
	var h Held
	for _, seq := range []uint64{0, 63, 64, pageSeqs - 1, pageSeqs, 1<<64 - 1} {
		if h.Has(seq) {
			t.Fatalf("empty set has %d", seq)
		}
		h.Add(seq)
		h.Add(seq)
		if !h.Has(seq) || h.Has(seq^1) && seq != 63 && seq != 64 {
			t.Fatalf("after add(%d): has = %v", seq, h.Has(seq))
		}
	}
	if h.Len() != 6 {
		t.Fatalf("len = %d, want 6", h.Len())
	}
	h.Remove(12345) // absent: no effect
	if h.Len() != 6 {
		t.Fatalf("len = %d after removing an absent sequence", h.Len())
	}
}
