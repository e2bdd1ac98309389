package progress

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Seqs is an immutable sorted set of stream sequences, kept as ranges:
// the exact sequences of a batch, an object or an export record. Its JSON
// form is compact (see MarshalJSON). The zero value is the empty set.
type Seqs struct {
	rs []Range // sorted, disjoint, not adjacent
}

// NewSeqs returns the set of the given sequences, in any order.
func NewSeqs(seqs []uint64) Seqs {
	s := slices.Clone(seqs)
	slices.Sort(s)
	var rs []Range
	for i, q := range s {
		if i > 0 && q == s[i-1] {
			continue
		}
		if n := len(rs); n > 0 && rs[n-1].Last+1 == q {
			rs[n-1].Last = q
			continue
		}
		rs = append(rs, Range{q, q})
	}
	return Seqs{rs: rs}
}

// SeqsOf returns the set of rs, which must be sorted, disjoint and not
// adjacent (as Set.Runs returns them). It keeps rs.
func SeqsOf(rs []Range) Seqs { return Seqs{rs: rs} }

// Ranges returns the ranges of the set; the caller must not change them.
func (s Seqs) Ranges() []Range { return s.rs }

// Len is the number of sequences in the set.
func (s Seqs) Len() int {
	n := 0
	for _, r := range s.rs {
		n += int(r.Last - r.First + 1)
	}
	return n
}

// First is the lowest sequence, or 0 for an empty set.
func (s Seqs) First() uint64 {
	if len(s.rs) == 0 {
		return 0
	}
	return s.rs[0].First
}

// Last is the highest sequence, or 0 for an empty set.
func (s Seqs) Last() uint64 {
	if len(s.rs) == 0 {
		return 0
	}
	return s.rs[len(s.rs)-1].Last
}

// Has reports whether q is in the set.
func (s Seqs) Has(q uint64) bool {
	i := sort.Search(len(s.rs), func(i int) bool { return s.rs[i].Last >= q })
	return i < len(s.rs) && s.rs[i].First <= q
}

// Common is how many sequences s and o share.
func (s Seqs) Common(o Seqs) int {
	n := 0
	for i, j := 0, 0; i < len(s.rs) && j < len(o.rs); {
		a, b := s.rs[i], o.rs[j]
		if lo, hi := max(a.First, b.First), min(a.Last, b.Last); lo <= hi {
			n += int(hi - lo + 1)
		}
		if a.Last < b.Last {
			i++
		} else {
			j++
		}
	}
	return n
}

// MarshalJSON encodes the ranges as base64 of unsigned varints: for each
// range, the distance from the end of the previous one, then its length
// minus one. A batch of one subject among ten takes about two bytes a
// sequence.
func (s Seqs) MarshalJSON() ([]byte, error) {
	buf := make([]byte, 0, len(s.rs)*3)
	var prev uint64
	for _, r := range s.rs {
		buf = binary.AppendUvarint(buf, r.First-prev)
		buf = binary.AppendUvarint(buf, r.Last-r.First)
		prev = r.Last
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(buf))
}

// UnmarshalJSON decodes what MarshalJSON wrote, refusing ranges out of
// order, adjacent, at sequence 0 or past the largest sequence.
func (s *Seqs) UnmarshalJSON(data []byte) error {
	var str string
	if err := json.Unmarshal(data, &str); err != nil {
		return err
	}
	buf, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return fmt.Errorf("sequence set: %w", err)
	}
	s.rs = nil
	var prev uint64
	for len(buf) > 0 {
		gap, n := binary.Uvarint(buf)
		if n <= 0 {
			return errors.New("sequence set: bad varint")
		}
		buf = buf[n:]
		length, n := binary.Uvarint(buf)
		if n <= 0 {
			return errors.New("sequence set: bad varint")
		}
		buf = buf[n:]
		first := prev + gap
		if (len(s.rs) > 0 && gap < 2) || first == 0 || first < prev || first+length < first {
			return errors.New("sequence set: runs out of order")
		}
		s.rs = append(s.rs, Range{first, first + length})
		prev = first + length
	}
	return nil
}

// SeqsInOrder returns the set of the n sequences seq(0) to seq(n-1), which
// come mostly in ascending order: a batch's messages, in the order they
// arrived, which is the stream's but for redeliveries. It counts the runs
// and builds them in two passes, and sorts only when that order is broken.
func SeqsInOrder(n int, seq func(i int) uint64) Seqs {
	runs := 0
	for i := range n {
		switch q := seq(i); {
		case i == 0 || q > seq(i-1)+1:
			runs++
		case q != seq(i-1)+1:
			seqs := make([]uint64, n)
			for i := range n {
				seqs[i] = seq(i)
			}
			return NewSeqs(seqs)
		}
	}
	if runs == 0 {
		return Seqs{}
	}
	rs := make([]Range, 0, runs)
	for i := range n {
		if q := seq(i); i > 0 && q == seq(i-1)+1 {
			rs[len(rs)-1].Last = q
		} else {
			rs = append(rs, Range{q, q})
		}
	}
	return Seqs{rs: rs}
}
