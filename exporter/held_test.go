package exporter

import (
	"math/rand/v2"
	"testing"
)

func TestHeldSetAgreesWithAMap(t *testing.T) {
	var h heldSet
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
			h.add(seq)
			ref[seq] = true
		} else {
			h.remove(seq)
			delete(ref, seq)
		}
		probe := uint64(r.IntN(300_000))
		if h.has(probe) != ref[probe] {
			t.Fatalf("has(%d) = %v, want %v", probe, h.has(probe), ref[probe])
		}
		if h.len() != len(ref) {
			t.Fatalf("len = %d, want %d", h.len(), len(ref))
		}
	}
	for seq := range ref {
		h.remove(seq)
	}
	if h.len() != 0 || len(h.pages) != 0 {
		t.Fatalf("after removing everything: len %d, %d pages", h.len(), len(h.pages))
	}
}

func TestHeldSetEdges(t *testing.T) {
	var h heldSet
	for _, seq := range []uint64{0, 63, 64, pageSeqs - 1, pageSeqs, 1<<64 - 1} {
		if h.has(seq) {
			t.Fatalf("empty set has %d", seq)
		}
		h.add(seq)
		h.add(seq)
		if !h.has(seq) || h.has(seq^1) && seq != 63 && seq != 64 {
			t.Fatalf("after add(%d): has = %v", seq, h.has(seq))
		}
	}
	if h.len() != 6 {
		t.Fatalf("len = %d, want 6", h.len())
	}
	h.remove(12345) // absent: no effect
	if h.len() != 6 {
		t.Fatalf("len = %d after removing an absent sequence", h.len())
	}
}
