package progress

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jetlake/jetlake/lossmarker"
)

// Range is an inclusive range of stream sequences, First to Last. Its text
// form is "first-last", or "first" for a single sequence.
type Range struct{ First, Last uint64 }

// String returns the text form.
func (r Range) String() string {
	b, _ := r.MarshalText()
	return string(b)
}

// Len is the number of sequences in r, saturating at the largest uint64.
func (r Range) Len() uint64 {
	if r.Last < r.First {
		return 0
	}
	if n := r.Last - r.First + 1; n != 0 {
		return n
	}
	return math.MaxUint64
}

// Contains reports whether q is in r.
func (r Range) Contains(q uint64) bool { return r.First <= q && q <= r.Last }

// MarshalText returns "first-last", or "first" when First == Last.
func (r Range) MarshalText() ([]byte, error) {
	b := strconv.AppendUint(nil, r.First, 10)
	if r.Last != r.First {
		b = append(b, '-')
		b = strconv.AppendUint(b, r.Last, 10)
	}
	return b, nil
}

// UnmarshalText parses what MarshalText writes.
func (r *Range) UnmarshalText(text []byte) error {
	first, last, found := strings.Cut(string(text), "-")
	f, err := strconv.ParseUint(first, 10, 64)
	if err != nil {
		return fmt.Errorf("range %q: %w", text, err)
	}
	l := f
	if found {
		if l, err = strconv.ParseUint(last, 10, 64); err != nil {
			return fmt.Errorf("range %q: %w", text, err)
		}
	}
	*r = Range{f, l}
	return nil
}

// Next returns q+1, saturating at the largest sequence.
func Next(q uint64) uint64 {
	if q == math.MaxUint64 {
		return q
	}
	return q + 1
}

// FromSorted turns sorted sequences into ranges. A sequence that repeats
// starts a new range, which overlaps the one before it: the ranges' lengths
// add up to len(seqs).
func FromSorted(seqs []uint64) []Range {
	var out []Range
	for _, q := range seqs {
		if n := len(out); n > 0 && out[n-1].Last+1 == q {
			out[n-1].Last = q
			continue
		}
		out = append(out, Range{q, q})
	}
	return out
}

// Within returns the sequences of sorted seqs inside r.
func Within(seqs []uint64, r Range) []uint64 {
	lo, hi := 0, len(seqs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if seqs[m] < r.First {
			lo = m + 1
		} else {
			hi = m
		}
	}
	end := lo
	for end < len(seqs) && seqs[end] <= r.Last {
		end++
	}
	return seqs[lo:end]
}

// Scan splits holes, sorted disjoint ranges, by a read of the stream that
// delivered every matching message up to read, seqs among them in order:
// scanned are the holes, or their parts, up to read, and existing the
// sequences of seqs inside them; rest are the parts past read, left for
// the next read, unless the read was full (it stopped at its bound: the
// rest is for a later walk).
func Scan(holes []Range, seqs []uint64, read uint64, full bool) (scanned []Range, existing []uint64, rest []Range) {
	i := 0
	for _, h := range holes {
		switch {
		case h.Last <= read:
			scanned = append(scanned, h)
		case h.First <= read:
			scanned = append(scanned, Range{First: h.First, Last: read})
			if !full {
				rest = append(rest, Range{First: read + 1, Last: h.Last})
			}
		default:
			if !full {
				rest = append(rest, h)
			}
			continue
		}
		for i < len(seqs) && seqs[i] < h.First {
			i++
		}
		for ; i < len(seqs) && seqs[i] <= min(h.Last, read); i++ {
			existing = append(existing, seqs[i])
		}
	}
	return scanned, existing, rest
}

// MarkerRanges returns the ranges a loss marker names (its Runs) as Ranges.
func MarkerRanges(rs []lossmarker.Range) []Range {
	if len(rs) == 0 {
		return nil
	}
	out := make([]Range, len(rs))
	for i, r := range rs {
		out[i] = Range(r)
	}
	return out
}
