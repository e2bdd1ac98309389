package progress

import (
	"math"
	"slices"
	"sort"
)

// Set is a set of stream sequences kept as sorted, disjoint,
// non-adjacent ranges, so that what it costs grows with the number of
// ranges, never with the number of sequences: a purge of 300 million
// sequences is one range. The zero value is an empty set.
//
// A large set takes new ranges into a second, small list first, and merges
// that into the first in one pass once it holds about the square root of
// the first's ranges: the batches of 10,000 subjects are stored in an
// order far from the stream's, and their sequences leave the set with
// 100,000 ranges, where inserting each into one slice would move half of
// it every time. Lookups search both lists; the operations that need the
// ranges as one list merge first.
type Set struct {
	rs     []Range
	recent []Range // sorted, disjoint and apart among themselves; empty while rs is small
	spare  []Range // the memory of an earlier rs, which the next merge reuses
}

// smallSet is the size of rs below which ranges are added to it directly.
const smallSet = 256

// Add adds every sequence of r (First <= Last).
func (s *Set) Add(r Range) {
	if n := len(s.rs); n > 0 && len(s.recent) == 0 && r.First > s.rs[n-1].Last {
		// Past the end, as a filtered consumer's gaps come: no search, no
		// move.
		if r.First == Next(s.rs[n-1].Last) {
			s.rs[n-1].Last = r.Last
		} else {
			s.rs = append(s.rs, r)
		}
		return
	}
	if len(s.rs) < smallSet {
		s.flush()
		s.rs = addTo(s.rs, r)
		return
	}
	s.recent = addTo(s.recent, r)
	if n := len(s.recent); n > 64 && n*n > len(s.rs) {
		s.flush()
	}
}

// addTo adds r to the ranges rs and returns them.
func addTo(rs []Range, r Range) []Range {
	// The ranges that touch or overlap r: from the first whose Last+1 is
	// at least r.First to the last whose First is at most r.Last+1.
	i := sort.Search(len(rs), func(i int) bool { return Next(rs[i].Last) >= r.First })
	j := sort.Search(len(rs), func(j int) bool { return rs[j].First > Next(r.Last) })
	if i < j {
		r.First = min(r.First, rs[i].First)
		r.Last = max(r.Last, rs[j-1].Last)
	}
	return slices.Replace(rs, i, j, r)
}

// AddAll adds every sequence of rs, sorted and disjoint ranges: one by one
// when they are few, in one merge with the set when they are many (a batch
// of one subject among ten is thousands of single-sequence ranges).
func (s *Set) AddAll(rs []Range) {
	if len(rs) <= 16 {
		for _, r := range rs {
			s.Add(r)
		}
		return
	}
	s.flush()
	s.rs, s.spare = merge(s.spare[:0], s.rs, rs), s.rs[:0]
}

// flush merges the recent ranges into rs.
func (s *Set) flush() {
	if len(s.recent) == 0 {
		return
	}
	s.rs, s.spare = merge(s.spare[:0], s.rs, s.recent), s.rs[:0]
	s.recent = s.recent[:0]
}

// merge appends to out, which must not share memory with a or b, the union
// of two lists of sorted, disjoint ranges, as sorted, disjoint,
// non-adjacent ranges.
func merge(out, a, b []Range) []Range {
	out = slices.Grow(out, len(a)+len(b))
	push := func(r Range) {
		if n := len(out); n > 0 && Next(out[n-1].Last) >= r.First {
			out[n-1].Last = max(out[n-1].Last, r.Last)
			return
		}
		out = append(out, r)
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || i < len(a) && a[i].First <= b[j].First {
			push(a[i])
			i++
		} else {
			push(b[j])
			j++
		}
	}
	return out
}

// RemoveAll removes every sequence of rs, sorted and disjoint ranges, in
// one pass over both lists.
func (s *Set) RemoveAll(rs []Range) {
	s.flush()
	if len(s.rs) == 0 || len(rs) == 0 {
		return
	}
	if len(rs) <= 4 {
		for _, r := range rs {
			s.Remove(r)
		}
		return
	}
	out := make([]Range, 0, len(s.rs))
	j := 0
	for _, a := range s.rs {
		for j < len(rs) && rs[j].Last < a.First {
			j++
		}
		at, covered := a.First, false
		for k := j; k < len(rs) && rs[k].First <= a.Last; k++ {
			if rs[k].First > at {
				out = append(out, Range{at, rs[k].First - 1})
			}
			if rs[k].Last >= a.Last {
				covered = true
				break
			}
			at = max(at, rs[k].Last+1)
		}
		if !covered {
			out = append(out, Range{at, a.Last})
		}
	}
	s.rs = out
}

// Remove removes every sequence of r (First <= Last).
func (s *Set) Remove(r Range) {
	s.flush()
	i := sort.Search(len(s.rs), func(i int) bool { return s.rs[i].Last >= r.First })
	j := sort.Search(len(s.rs), func(j int) bool { return s.rs[j].First > r.Last })
	if i >= j {
		return
	}
	var keep [2]Range
	n := 0
	if first := s.rs[i]; first.First < r.First {
		keep[n] = Range{first.First, r.First - 1}
		n++
	}
	if last := s.rs[j-1]; last.Last > r.Last {
		keep[n] = Range{r.Last + 1, last.Last}
		n++
	}
	s.rs = slices.Replace(s.rs, i, j, keep[:n]...)
}

// Has reports whether q is in the set.
func (s *Set) Has(q uint64) bool { return contains(s.rs, q) || contains(s.recent, q) }

// contains reports whether q is in one of the sorted ranges rs.
func contains(rs []Range, q uint64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Last >= q })
	return i < len(rs) && rs[i].First <= q
}

// Empty reports whether the set holds no sequence.
func (s *Set) Empty() bool { return len(s.rs) == 0 && len(s.recent) == 0 }

// Runs returns the ranges; the caller must not change them.
func (s *Set) Runs() []Range {
	s.flush()
	return s.rs
}

// Count returns the number of sequences, saturating at the largest uint64.
func (s *Set) Count() uint64 {
	s.flush()
	return Count(s.rs)
}

// Within returns the parts of the set inside r, as new ranges.
func (s *Set) Within(r Range) []Range {
	s.flush()
	i := sort.Search(len(s.rs), func(i int) bool { return s.rs[i].Last >= r.First })
	var out []Range
	for ; i < len(s.rs) && s.rs[i].First <= r.Last; i++ {
		out = append(out, Range{max(s.rs[i].First, r.First), min(s.rs[i].Last, r.Last)})
	}
	return out
}

// Absorb removes the ranges that start at or below floor+1 and returns the
// floor moved over them: the highest q such that every sequence from the
// old floor+1 to q was in the set.
func (s *Set) Absorb(floor uint64) uint64 {
	// Both lists from their fronts, without merging them.
	for {
		switch {
		case len(s.rs) > 0 && s.rs[0].First <= Next(floor):
			floor = max(floor, s.rs[0].Last)
			s.rs = s.rs[1:]
		case len(s.recent) > 0 && s.recent[0].First <= Next(floor):
			floor = max(floor, s.recent[0].Last)
			s.recent = s.recent[1:]
		default:
			return floor
		}
	}
}

// Outside returns the parts of r the set leaves out, as new ranges.
func (s *Set) Outside(r Range) []Range {
	var out []Range
	at := r.First
	for _, d := range s.Within(r) {
		if d.First > at {
			out = append(out, Range{at, d.First - 1})
		}
		if d.Last == r.Last {
			return out
		}
		at = Next(d.Last)
	}
	if at <= r.Last {
		out = append(out, Range{at, r.Last})
	}
	return out
}

// Count returns the number of sequences in rs, disjoint ranges, saturating
// at the largest uint64.
func Count(rs []Range) uint64 {
	var n uint64
	for _, r := range rs {
		c := r.Len()
		if n+c < n {
			return math.MaxUint64
		}
		n += c
	}
	return n
}
