package exporter

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/jetlake/jetlake/lossmarker"
)

// maxOverlaps bounds the overlap lines of a report: past a hundred, more
// say nothing new.
const maxOverlaps = 100

// objectRuns names the sequences an object holds, as ranges sorted by
// First. The ranges of an object read from its records overlap where two
// of its records hold the same sequence.
type objectRuns struct {
	key  string
	runs []Range
}

// coverageInput is what checkCoverage compares: the sequences that must be
// covered, and what covers them.
type coverageInput struct {
	scope    Range        // sequences checked; empty when Last < First
	data     []objectRuns // data objects, in the order they were listed
	rejected []objectRuns // objects of rejected messages
	markers  []*lossmarker.Marker
	// filtered: only the sequences in stream must be covered, not every
	// sequence in scope. stream holds the sequences of the matching
	// messages still in the stream, sorted.
	filtered bool
	stream   []uint64
}

// coverage is what checkCoverage found.
type coverage struct {
	missing  []Range  // sequences that must be covered and are not
	overlaps []string // at most maxOverlaps lines
	// messages counts the sequences in scope in data objects;
	// rejectedMessages those in rejected objects and in no data object.
	messages, rejectedMessages int
}

// checkCoverage finds the sequences in scope that are in no object and no
// marker, and those in more than one object. It works on ranges, never on
// single sequences: for R ranges of objects and markers, and for a filtered
// consumer N sequences in the stream, it costs O((R+N) log R) and holds
// O(R) memory besides its input and result, however many sequences a range
// spans.
func checkCoverage(in coverageInput) coverage {
	var c coverage
	scope := in.scope
	if scope.Last < scope.First {
		return c
	}

	// Every run of every object, clipped to the scope and sorted by first
	// sequence; obj indexes data objects first, then rejected ones.
	type run struct {
		Range
		obj int
	}
	keys := make([]string, 0, len(in.data)+len(in.rejected))
	var runs []run
	for i, o := range slices.Concat(in.data, in.rejected) {
		keys = append(keys, o.key)
		for _, r := range o.runs {
			if r, ok := clip(r, scope); ok {
				runs = append(runs, run{r, i})
			}
		}
	}
	slices.SortFunc(runs, func(a, b run) int {
		return cmp.Or(cmp.Compare(a.First, b.First), cmp.Compare(a.obj, b.obj), cmp.Compare(a.Last, b.Last))
	})

	// Overlaps: a run overlaps each earlier run that has not ended before it
	// starts, first at its own first sequence. Active holds the earlier runs
	// that may still overlap one to come. Each run kept in it is a line of
	// the report, so the sweep ends once the report is full, and its cost
	// stays O(R).
	var active []run
	for _, r := range runs {
		if len(c.overlaps) == maxOverlaps {
			break
		}
		kept := active[:0]
		for _, a := range active {
			if a.Last < r.First {
				continue
			}
			kept = append(kept, a)
			if len(c.overlaps) < maxOverlaps {
				first, second := a.obj, r.obj
				if first > second {
					first, second = second, first
				}
				c.overlaps = append(c.overlaps, fmt.Sprintf("sequence %d is in %s and %s", r.First, keys[first], keys[second]))
			}
		}
		active = append(kept, r)
	}

	// What the objects hold, each sequence once: a sequence in a data
	// object and a rejected one too counts as a message only.
	var data, rejected ranges
	for _, r := range runs {
		if r.obj < len(in.data) {
			data = data.add(r.Range)
		} else {
			rejected = rejected.add(r.Range)
		}
	}
	objects := union(data, rejected)
	c.messages = int(data.len())
	c.rejectedMessages = int(objects.len()) - c.messages

	var marked ranges
	for _, r := range markedRanges(in.markers) {
		if r, ok := clip(r, scope); ok {
			marked = append(marked, r)
		}
	}
	covered := union(objects, marked)

	if in.filtered {
		c.missing = uncoveredOf(in.stream, covered, scope)
	} else {
		c.missing = gaps(covered, scope)
	}
	return c
}

// clip returns the part of r within scope, and false if there is none.
func clip(r, scope Range) (Range, bool) {
	r = Range{max(r.First, scope.First), min(r.Last, scope.Last)}
	return r, r.First <= r.Last
}

// add appends r to rs, sorted and merged, which must hold no range that
// starts after r. It merges r with the last range when they overlap or
// touch.
func (rs ranges) add(r Range) ranges {
	if n := len(rs); n > 0 && (r.First <= rs[n-1].Last || r.First-1 == rs[n-1].Last) {
		rs[n-1].Last = max(rs[n-1].Last, r.Last)
		return rs
	}
	return append(rs, r)
}

// len returns the number of sequences in rs, which are disjoint.
func (rs ranges) len() uint64 {
	var n uint64
	for _, r := range rs {
		n += r.Last - r.First + 1
	}
	return n
}

// union returns the sequences in a or b, both sorted and merged, as sorted
// and merged ranges.
func union(a, b ranges) ranges {
	out := make(ranges, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || len(a) > 0 && a[0].First <= b[0].First {
			out, a = out.add(a[0]), a[1:]
		} else {
			out, b = out.add(b[0]), b[1:]
		}
	}
	return out
}

// gaps returns the ranges of scope that covered leaves out. Covered must
// be sorted, merged and within scope.
func gaps(covered ranges, scope Range) []Range {
	var out []Range
	next := scope.First // the first sequence not known to be covered
	for _, r := range covered {
		if r.First > next {
			out = append(out, Range{next, r.First - 1})
		}
		if r.Last == scope.Last {
			return out
		}
		next = r.Last + 1
	}
	return append(out, Range{next, scope.Last})
}

// uncoveredOf returns the sequences of seqs within scope that covered leaves
// out, as ranges of sequences next to each other in the stream. Seqs must be
// sorted; covered sorted and merged.
func uncoveredOf(seqs []uint64, covered ranges, scope Range) []Range {
	var out ranges
	for _, q := range seqs {
		if q >= scope.First && q <= scope.Last && !covered.has(q) {
			out = out.add(Range{q, q})
		}
	}
	return out
}
