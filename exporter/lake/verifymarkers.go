package lake

import (
	"cmp"
	"slices"

	"github.com/jetlake/jetlake/exporter/progress"
	"github.com/jetlake/jetlake/lossmarker"
)

// withoutExported returns the markers with the sequences that data objects
// hold taken out, and how many sequences that took out. A filtered
// consumer's marker of a moved first sequence may name other subjects'
// sequences, which another partition or connector exported: those were
// never lost. A marker left with nothing is dropped.
func withoutExported(markers []*lossmarker.Marker, data []objectRuns) ([]*lossmarker.Marker, uint64) {
	var all []progress.Range
	for _, o := range data {
		all = append(all, o.runs...)
	}
	slices.SortFunc(all, func(a, b progress.Range) int { return cmp.Compare(a.First, b.First) })
	var stored progress.Set
	for _, r := range all {
		stored.Add(r)
	}
	var out []*lossmarker.Marker
	var taken uint64
	for _, m := range markers {
		var left []progress.Range
		var total uint64
		for _, r := range m.Runs() {
			total += r.Last - r.First + 1
			left = append(left, stored.Outside(r)...)
		}
		n := progress.Count(left)
		if n == total {
			out = append(out, m)
			continue
		}
		taken += total - n
		if len(left) == 0 {
			continue
		}
		trimmed := *m
		trimmed.FirstSeq, trimmed.LastSeq, trimmed.Count, trimmed.Ranges = left[0].First, left[len(left)-1].Last, n, nil
		if len(left) > 1 {
			for _, r := range left {
				trimmed.Ranges = append(trimmed.Ranges, r)
			}
		}
		out = append(out, &trimmed)
	}
	return out, taken
}
