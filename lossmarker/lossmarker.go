// Package lossmarker describes the messages jetlake could not export, as
// small JSON objects stored beside the data under
// "<prefix>/_jetlake/lost/", never inside the table folders.
//
// A marker is written only when data truly cannot be exported: the stream
// removed messages before they were read (a gap), or a message can be
// written in no form at all (poison). The package is pure: no I/O, no clock.
package lossmarker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jetlake/jetlake/pathtemplate"
)

// Reason says why messages were lost.
type Reason string

// The reasons.
const (
	// Gap: the stream removed the messages (limits, max age, max messages
	// per subject, a delete) before they were exported.
	Gap Reason = "gap"
	// Poison: the message can be written in no form at all; it was
	// terminated.
	Poison Reason = "poison"
)

// Dir is the folder, under the connector's prefix, that holds jetlake's own
// objects. Query engines must not read it; it sits beside the table folders.
// It is pathtemplate.OwnDir, which names every key.
const Dir = pathtemplate.OwnDir

// Marker records a range of stream sequences that was not exported.
type Marker struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Subject  string `json:"subject,omitempty"` // when known
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	Count    uint64 `json:"count"` // sequences named
	// Ranges, when set, are the exact sequences the marker names: sorted,
	// disjoint, not adjacent, from FirstSeq to LastSeq, Count in all. A
	// marker without them names every sequence from FirstSeq to LastSeq.
	Ranges          []Range   `json:"ranges,omitempty"`
	Reason          Reason    `json:"reason"`
	Error           string    `json:"error"`
	DetectedAt      time.Time `json:"detected_at"`
	ExporterVersion string    `json:"exporter_version"`
}

// Runs returns the ranges the marker names: its Ranges, or the one range
// from FirstSeq to LastSeq.
func (m *Marker) Runs() []Range {
	if len(m.Ranges) > 0 {
		return m.Ranges
	}
	return []Range{{First: m.FirstSeq, Last: m.LastSeq}}
}

// Key returns the marker's object key, as pathtemplate.LostKey names it:
// "<prefix>/_jetlake/lost/<stream>/<date>/<first:020>-<last:020>.lost.json",
// with the date of DetectedAt in UTC.
func (m *Marker) Key(prefix string) string {
	return pathtemplate.LostKey(prefix, m.Stream, m.DetectedAt, m.FirstSeq, m.LastSeq)
}

// Validate reports what is wrong with a marker, or nil.
func (m *Marker) Validate() error {
	var errs []error
	if m.Stream == "" {
		errs = append(errs, errors.New("stream is empty"))
	}
	if m.FirstSeq == 0 || m.LastSeq < m.FirstSeq {
		errs = append(errs, fmt.Errorf("range %d-%d is not a range of stream sequences", m.FirstSeq, m.LastSeq))
	}
	switch {
	case len(m.Ranges) > 0:
		if err := m.validateRanges(); err != nil {
			errs = append(errs, err)
		}
	case m.Count == 0 || m.Count > m.LastSeq-m.FirstSeq+1:
		errs = append(errs, fmt.Errorf("count %d does not fit range %d-%d", m.Count, m.FirstSeq, m.LastSeq))
	}
	if m.Reason != Gap && m.Reason != Poison {
		errs = append(errs, fmt.Errorf("reason %q is neither %q nor %q", m.Reason, Gap, Poison))
	}
	if m.DetectedAt.IsZero() {
		errs = append(errs, errors.New("detected_at is not set"))
	} else if y := m.DetectedAt.UTC().Year(); y < 0 || y > 9999 {
		// JSON and the key's date hold only four-digit years.
		errs = append(errs, fmt.Errorf("detected_at year %d is outside 0-9999", y))
	}
	if len(errs) > 0 {
		return fmt.Errorf("lossmarker: %w", errors.Join(errs...))
	}
	return nil
}

// validateRanges checks that Ranges are sorted, disjoint and not adjacent,
// span FirstSeq to LastSeq and hold Count sequences.
func (m *Marker) validateRanges() error {
	var n uint64
	for i, r := range m.Ranges {
		if r.First == 0 || r.Last < r.First {
			return fmt.Errorf("ranges[%d] %d-%d is not a range of stream sequences", i, r.First, r.Last)
		}
		if prev := m.Ranges[max(i-1, 0)]; i > 0 && (r.First <= prev.Last || r.First-prev.Last < 2) {
			return fmt.Errorf("ranges[%d] %d-%d does not follow %d-%d with a gap", i, r.First, r.Last, prev.First, prev.Last)
		}
		n += r.Last - r.First + 1
	}
	if first, last := m.Ranges[0].First, m.Ranges[len(m.Ranges)-1].Last; first != m.FirstSeq || last != m.LastSeq {
		return fmt.Errorf("ranges span %d-%d, not %d-%d", first, last, m.FirstSeq, m.LastSeq)
	}
	if n != m.Count {
		return fmt.Errorf("ranges hold %d sequences, not count %d", n, m.Count)
	}
	return nil
}

// Encode returns the marker's object body: indented JSON and a newline.
func (m *Marker) Encode() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	mm := *m
	mm.DetectedAt = m.DetectedAt.UTC()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&mm); err != nil {
		return nil, fmt.Errorf("lossmarker: %w", err)
	}
	return b.Bytes(), nil
}

// Parse decodes and validates a marker body.
func Parse(data []byte) (*Marker, error) {
	var m Marker
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("lossmarker: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("lossmarker: data after the marker object")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// MaxRanges bounds the ranges one marker names; more take several markers.
const MaxRanges = 10_000

// Gaps returns the markers of lost, sorted disjoint ranges of stream that
// consumer never exported because the stream removed them, one per
// MaxRanges ranges; why says what removed them.
func Gaps(stream, consumer string, lost []Range, why string) []*Marker {
	var out []*Marker
	for len(lost) > 0 {
		part := lost[:min(len(lost), MaxRanges)]
		lost = lost[len(part):]
		m := &Marker{
			Stream: stream, Consumer: consumer,
			FirstSeq: part[0].First, LastSeq: part[len(part)-1].Last,
			Reason: Gap,
		}
		for _, r := range part {
			m.Count += r.Last - r.First + 1
			if len(part) > 1 {
				m.Ranges = append(m.Ranges, r)
			}
		}
		m.Error = fmt.Sprintf("%s: %d sequences from %d to %d", why, m.Count, m.FirstSeq, m.LastSeq)
		out = append(out, m)
	}
	return out
}
