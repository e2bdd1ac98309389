package lossmarker

import (
	"fmt"
	"strconv"
	"strings"
)

// Range is an inclusive range of stream sequences a marker names, First to
// Last. In a marker's JSON it is a string, "first-last", or "first" for a
// single sequence: the form is the marker format's own.
type Range struct{ First, Last uint64 }

// String returns the text form.
func (r Range) String() string {
	b, _ := r.MarshalText()
	return string(b)
}

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
