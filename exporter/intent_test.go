package exporter

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/progress"
)

func TestSeqSetRoundTrips(t *testing.T) {
	for _, seqs := range [][]uint64{
		nil,
		{1},
		{5, 3, 4, 4, 10},
		{1, 11, 21, 31},
		{1<<63 + 5, 1<<63 + 6, 1 << 40},
	} {
		set := progress.NewSeqs(seqs)
		data, err := json.Marshal(set)
		if err != nil {
			t.Fatal(err)
		}
		var back progress.Seqs
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%v: %v", seqs, err)
		}
		var got []uint64
		for _, r := range back.Ranges() {
			for q := r.First; q <= r.Last; q++ {
				got = append(got, q)
			}
		}
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
	data, _ := json.Marshal(progress.NewSeqs(seqs))
	if per := float64(len(data)) / float64(len(seqs)); per > 3 {
		t.Fatalf("%.1f bytes a sequence, want at most 3", per)
	}
}

// batchSeqs builds the runs of a batch in one pass when its items are in
// order, and gives the same set as newSeqSet when they are not.
func TestBatchSeqsMatchesNewSeqSet(t *testing.T) {
	for _, seqs := range [][]uint64{
		nil,
		{7},
		{1, 2, 3, 10, 11, 20},
		{5, 15, 25, 35, 36},
		{3, 1, 2},          // a redelivery ahead of later ones
		{1, 2, 2, 3},       // a duplicate
		{10, 11, 12, 4, 5}, // out of order at the end
	} {
		b := &msgBatch{}
		for _, q := range seqs {
			b.Items = append(b.Items, buffer.Item[jsclient.AckRef]{Seq: q})
		}
		got, want := batchSeqs(b), progress.NewSeqs(seqs)
		if !slices.Equal(got.Ranges(), want.Ranges()) {
			t.Errorf("batchSeqs(%v) = %v, want %v", seqs, got.Ranges(), want.Ranges())
		}
	}
}

// BenchmarkBatchSeqs takes the sequences of a batch of 20,000 messages of
// one subject among ten, as each stored batch does.
func BenchmarkBatchSeqs(b *testing.B) {
	batch := &msgBatch{}
	for i := range 20_000 {
		batch.Items = append(batch.Items, buffer.Item[jsclient.AckRef]{Seq: uint64(i*10 + 3)})
	}
	b.ReportAllocs()
	for b.Loop() {
		if s := batchSeqs(batch); len(s.Ranges()) != 20_000 {
			b.Fatal(len(s.Ranges()))
		}
	}
}
