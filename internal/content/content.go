// Package content reads what a message's place depends on from its payload
// and headers: the typed columns a path template or a table's partitioning
// renders, and the event time the time variables take, with its fallback.
// The exporter's loop and plan's sample keys read messages through it. It
// is pure: no I/O, and time comes as an argument.
package content

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Reader reads what a message's place depends on from its payload and
// headers. It reuses its space: it allocates nothing per message, and is
// not safe for concurrent use.
type Reader struct {
	ext    *formats.Extractor // nil when no typed column is read
	names  []string           // the typed columns, in the extractor's order
	vals   []formats.Value    // the last message's values, in that order
	fields []pathtemplate.Field
	shown  []int  // the columns the path template renders, by index in names
	text   []byte // the fields' text
	ends   []int  // where each field's text ends in text

	et       config.EventTime
	timeCol  int // index in names of time_source's column, or -1
	timeText formats.TimeText
}

// New returns the Reader out asks for, or nil when paths depend on the
// envelope alone and no table partition reads a typed column (tableCols).
func New(out *config.Output, tableCols bool) (*Reader, error) {
	if !out.UsesContent() && !tableCols {
		return nil, nil
	}
	c := &Reader{et: out.Time, timeCol: -1}
	if len(out.Columns) > 0 {
		for i, col := range out.Columns {
			c.names = append(c.names, col.Name)
			if col.Name == out.Time.Column {
				c.timeCol = i
			}
		}
		ext, err := formats.NewExtractor(out.TypedColumns(), out.OnTypeError)
		if err != nil {
			return nil, err
		}
		c.ext = ext
		if out.PathTemplate != nil {
			// Only the columns the template renders are made text.
			for _, name := range out.PathTemplate.Names(pathtemplate.VarColumn) {
				if i := slices.Index(c.names, name); i >= 0 {
					c.shown = append(c.shown, i)
				}
			}
		}
		c.fields = make([]pathtemplate.Field, len(c.shown))
		c.ends = make([]int, len(c.shown))
	}
	if c.et.Header != "" {
		tt, err := formats.NewTimeText(out.Time.Unit)
		if err != nil {
			return nil, err
		}
		c.timeText = tt
	}
	return c, nil
}

// NoEventTimeError is why a message has no event time, for the rejected
// object's reason header when time_fallback is "reject".
type NoEventTimeError struct {
	Source string // time_source
	Why    string
}

func (e *NoEventTimeError) Error() string {
	return fmt.Sprintf("no event time: time_source %s: %s", e.Source, e.Why)
}

// Read reads data and headers, and sets what v renders from them: the
// columns' values, the headers, the event time (ingest, the JetStream
// timestamp, when there is none and the fallback allows it) and the time
// zone. An event time whose year is outside pathtemplate.MinYear and
// MaxYear, in UTC or in the connector's zone, is none: a key has four
// digits for it. fellBack reports that the event time fell back to ingest. The
// error is a *formats.TypeError from a column, or a *NoEventTimeError
// when time_fallback is "reject"; the message is then rejected.
func (c *Reader) Read(data []byte, headers map[string][]string, ingest time.Time, v *pathtemplate.Values) (fellBack bool, err error) {
	v.Location, v.Headers = c.et.Location, headers
	if c.ext != nil {
		if c.vals, err = c.ext.Extract(data); err != nil {
			return false, err
		}
		c.text = c.text[:0]
		for j, i := range c.shown {
			c.text = c.vals[i].AppendText(c.text)
			c.ends[j] = len(c.text)
		}
		start := 0
		for j, i := range c.shown {
			c.fields[j] = pathtemplate.Field{Name: c.names[i], Missing: c.vals[i].Null, Text: c.text[start:c.ends[j]]}
			start = c.ends[j]
		}
		v.Columns = c.fields
	}
	if c.et.Ingest() {
		v.Time = ingest
		return false, nil
	}
	ts, why := c.eventTime(headers)
	if why == "" && !pathtemplate.InRange(ts, c.et.Location) {
		// Its year would not fit the four digits a key has for it.
		why = fmt.Sprintf("%s is outside the years %04d to %04d", ts.UTC().Format(time.RFC3339Nano), pathtemplate.MinYear, pathtemplate.MaxYear)
		if c.et.Location != nil {
			why += " (in UTC and in " + c.et.Location.String() + ")"
		}
	}
	switch {
	case why == "":
		v.Time = ts
	case c.et.Reject:
		return false, &NoEventTimeError{Source: c.et.Source(), Why: why}
	default:
		v.Time, fellBack = ingest, true
	}
	return fellBack, nil
}

// Values returns the typed columns' values of the message Read read last,
// in [[output.columns]] order; they are valid until the next Read.
func (c *Reader) Values() []formats.Value { return c.vals }

// eventTime returns the message's event time from its time source, a
// column or a header, or why it has none.
func (c *Reader) eventTime(headers map[string][]string) (time.Time, string) {
	switch {
	case c.timeCol >= 0:
		if ts, ok := c.vals[c.timeCol].Time(); ok {
			return ts, ""
		}
		return time.Time{}, "the payload has no value for column " + c.names[c.timeCol]
	default:
		name := c.et.Header
		h := headers[name]
		if len(h) == 0 {
			return time.Time{}, "the message has no header " + name
		}
		ts, err := c.timeText.Parse(h[0])
		if err != nil {
			if errors.Is(err, formats.ErrNoTime) {
				return time.Time{}, "header " + name + " is empty"
			}
			return time.Time{}, fmt.Sprintf("header %s %q: %v", name, truncate(h[0], 64), err)
		}
		return ts, ""
	}
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
