package lake

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/jetlake/jetlake/internal/progress"
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
	runs []progress.Range
}

// coverageInput is what checkCoverage compares: the sequences that must be
// covered, and what covers them.
type coverageInput struct {
	scope    progress.Range // sequences checked; empty when Last < First
	data     []objectRuns   // data objects, in the order they were listed
	rejected []objectRuns   // objects of rejected messages
	markers  []*lossmarker.Marker
	// filtered: only the sequences in stream must be covered, not every
	// sequence in scope. stream holds the sequences of the matching
	// messages still in the stream, sorted.
	filtered bool
	stream   []uint64
}

// coverage is what checkCoverage found.
type coverage struct {
	missing  []progress.Range // sequences that must be covered and are not
	overlaps []string         // at most maxOverlaps lines
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
	// sequence.
	keys := make([]string, 0, len(in.data)+len(in.rejected))
	var runs []objectRun
	for i, o := range slices.Concat(in.data, in.rejected) {
		keys = append(keys, o.key)
		for _, r := range o.runs {
			if r, ok := clip(r, scope); ok {
				runs = append(runs, objectRun{r, i})
			}
		}
	}
	slices.SortFunc(runs, func(a, b objectRun) int {
		return cmp.Or(cmp.Compare(a.First, b.First), cmp.Compare(a.obj, b.obj), cmp.Compare(a.Last, b.Last))
	})

	c.overlaps = overlaps(runs, keys)

	// What the objects hold, each sequence once: a sequence in a data
	// object and a rejected one too counts as a message only.
	var data, rejected progress.Set
	for _, r := range runs {
		if r.obj < len(in.data) {
			data.Add(r.Range)
		} else {
			rejected.Add(r.Range)
		}
	}
	var covered progress.Set
	covered.AddAll(data.Runs())
	covered.AddAll(rejected.Runs())
	c.messages = int(data.Count())
	c.rejectedMessages = int(covered.Count()) - c.messages

	for _, r := range markedRanges(in.markers) {
		if r, ok := clip(r, scope); ok {
			covered.Add(r)
		}
	}

	if in.filtered {
		c.missing = uncoveredOf(in.stream, &covered, scope)
	} else {
		c.missing = covered.Outside(scope)
	}
	return c
}

// objectRun is a run of sequences of an object; obj indexes data objects
// first, then rejected ones.
type objectRun struct {
	progress.Range
	obj int
}

// overlaps reports the sequences two objects both hold, from runs sorted
// by first sequence, up to maxOverlaps lines. A run overlaps each earlier
// run that has not ended before it starts, first at its own first
// sequence. Active holds the earlier runs that may still overlap one to
// come. Each run kept in it is a line of the report, so the sweep ends
// once the report is full, and its cost stays O(R).
func overlaps(runs []objectRun, keys []string) []string {
	var out []string
	var active []objectRun
	for _, r := range runs {
		if len(out) == maxOverlaps {
			break
		}
		kept := active[:0]
		for _, a := range active {
			if a.Last < r.First {
				continue
			}
			kept = append(kept, a)
			if len(out) < maxOverlaps {
				first, second := a.obj, r.obj
				if first > second {
					first, second = second, first
				}
				out = append(out, fmt.Sprintf("sequence %d is in %s and %s", r.First, keys[first], keys[second]))
			}
		}
		active = append(kept, r)
	}
	return out
}

// clip returns the part of r within scope, and false if there is none.
func clip(r, scope progress.Range) (progress.Range, bool) {
	r = progress.Range{First: max(r.First, scope.First), Last: min(r.Last, scope.Last)}
	return r, r.First <= r.Last
}

// uncoveredOf returns the sequences of seqs within scope that covered leaves
// out, as ranges of sequences next to each other in the stream. Seqs must be
// sorted; covered sorted and merged.
func uncoveredOf(seqs []uint64, covered *progress.Set, scope progress.Range) []progress.Range {
	var out progress.Set
	for _, q := range seqs {
		if scope.Contains(q) && !covered.Has(q) {
			out.Add(progress.Range{First: q, Last: q})
		}
	}
	return out.Runs()
}
