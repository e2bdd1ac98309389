package exporter

import (
	"slices"
	"testing"

	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
)

// A data object's metadata gives its exact sequences only when its
// sequence set, or a count without gaps, says which they are.
func TestMetaSeqs(t *testing.T) {
	enc := func(seqs ...uint64) string {
		b, err := progress.NewSeqs(seqs).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return string(b[1 : len(b)-1])
	}
	md := func(first, last, count, seqs string) map[string]string {
		return map[string]string{objstore.MetaFirstSeq: first, objstore.MetaLastSeq: last, objstore.MetaCount: count, objstore.MetaSeqs: seqs}
	}
	for _, tc := range []struct {
		name string
		md   map[string]string
		want []progress.Range // nil: not known
	}{
		{"no gap", md("5", "9", "5", ""), []progress.Range{{First: 5, Last: 9}}},
		{"gaps, no set", md("5", "9", "3", ""), nil},
		{"gaps with the set", md("5", "9", "3", enc(5, 7, 9)), []progress.Range{{First: 5, Last: 5}, {First: 7, Last: 7}, {First: 9, Last: 9}}},
		{"a set that is not the bounds", md("5", "9", "3", enc(5, 7, 8)), nil},
		{"a set of another count", md("5", "9", "2", enc(5, 7, 9)), nil},
		{"no metadata", map[string]string{}, nil},
		{"sequence zero", md("0", "3", "4", ""), nil},
		{"last before first", md("9", "5", "1", ""), nil},
		{"a bad set", md("5", "9", "5", "!!"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := objstore.SeqsOf(tc.md)
			if ok != (tc.want != nil) || ok && !slices.Equal(got.Ranges(), tc.want) {
				t.Fatalf("metaSeqs = %v, %v; want %v", got.Ranges(), ok, tc.want)
			}
		})
	}
}

// common counts the sequences two sets share: interleaved sets of two
// subjects share none, though their bounds overlap.
func TestSeqSetCommon(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []uint64
		want int
	}{
		{"interleaved", []uint64{1, 3, 5, 7}, []uint64{2, 4, 6, 8}, 0},
		{"same", []uint64{1, 2, 3}, []uint64{1, 2, 3}, 3},
		{"partly", []uint64{1, 2, 3, 10, 11}, []uint64{3, 4, 11, 12}, 2},
		{"disjoint", []uint64{1, 2}, []uint64{5, 6}, 0},
		{"empty", nil, []uint64{5, 6}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := progress.NewSeqs(tc.a), progress.NewSeqs(tc.b)
			if n, m := a.Common(b), b.Common(a); n != tc.want || m != tc.want {
				t.Fatalf("common = %d and %d, want %d", n, m, tc.want)
			}
		})
	}
}
