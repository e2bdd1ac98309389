package exporter

import (
	"cmp"
	"slices"
	"sort"

	"github.com/jetlake/jetlake/lossmarker"
)

// withoutExported returns the markers with the sequences that data objects
// hold taken out, and how many sequences that took out. A filtered
// consumer's marker of a moved first sequence may name other subjects'
// sequences, which another partition or connector exported: those were
// never lost. A marker left with nothing is dropped.
func withoutExported(markers []*lossmarker.Marker, data []objectRuns) ([]*lossmarker.Marker, uint64) {
	var all []Range
	for _, o := range data {
		all = append(all, o.runs...)
	}
	slices.SortFunc(all, func(a, b Range) int { return cmp.Compare(a.First, b.First) })
	var stored ranges
	for _, r := range all {
		stored = stored.add(r)
	}
	var out []*lossmarker.Marker
	var taken uint64
	for _, m := range markers {
		var left []Range
		var total uint64
		for _, r := range m.Runs() {
			total += r[1] - r[0] + 1
			left = append(left, stored.outside(Range{r[0], r[1]})...)
		}
		n := ranges(left).len()
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
				trimmed.Ranges = append(trimmed.Ranges, lossmarker.Range{r.First, r.Last})
			}
		}
		out = append(out, &trimmed)
	}
	return out, taken
}

// outside returns the parts of r that rs, sorted and merged, leaves out.
func (rs ranges) outside(r Range) []Range {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Last >= r.First })
	var in ranges
	for ; i < len(rs) && rs[i].First <= r.Last; i++ {
		c, _ := clip(rs[i], r)
		in = append(in, c)
	}
	return gaps(in, r)
}
