package formats

import (
	"encoding/base64"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
)

// parquetBatch is the Batch of the Parquet format.
type parquetBatch struct {
	e    *parquetEncoder
	cols []colData
	n    int

	// The size estimate: per column, the compressed bytes per raw byte, and
	// the last sample's ratio (0 before the first sample).
	ratios      []float64
	sample      []float64
	nextProbe   int64   // total raw size at which to sample next
	perRowGroup float64 // bytes of file metadata per row group
	fresh       bool    // ratios are still to be taken from the encoder

	size, mem         int
	prevSize, prevMem int
	canDrop, finished bool
	out               chunks // the file, after Finish
	err               error
	values            []parquet.Value
	reader            cellReader // the typed columns' values of the row being added
	compact, str      []byte     // scratch for the payload and strings
	hdr, probe        []byte     // scratch for headers and samples
	keys              []string
}

// Append adds r as one row, as Batch.Append says.
func (b *parquetBatch) Append(r *Record) error {
	if b.finished {
		return ErrFinished
	}
	b.canDrop = false // DropLast drops nothing after a failed Append
	if r.Sequence > math.MaxInt64 {
		return fmt.Errorf("formats: sequence %d does not fit a parquet INT64", r.Sequence)
	}
	isJSON := false
	if len(r.Data) > 0 {
		b.compact, isJSON = appendCompactJSON(b.compact[:0], r.Data)
	}

	// Extract every typed value before the batch changes, so that a
	// rejected record leaves it as it was.
	if _, err := b.reader.read(b.compact, isJSON); err != nil {
		return err
	}

	b.prevSize, b.prevMem = b.size, b.mem
	b.addRow(r, isJSON)
	b.n++
	b.canDrop = true
	b.measure()
	return nil
}

// addRow appends r as one row to the columns: the envelope (stream,
// subject, sequence, time and, when the options ask for them, headers),
// the typed values b.reader read, and the payload, compacted when
// it is JSON (isJSON), as it is when it is other UTF-8 text, base64-encoded
// otherwise. It cannot fail, so it runs only once the record was accepted.
func (b *parquetBatch) addRow(r *Record, isJSON bool) {
	e := b.e
	cols := b.cols
	addText(&cols[colStream], r.Stream)
	addText(&cols[colSubject], r.Subject)
	cols[colSequence].addValue(r.Sequence)
	cols[colTimestamp].addValue(uint64(r.Time.UnixMicro()))
	next := firstOptionalCol
	if e.opts.Headers {
		c := &cols[next]
		next++
		if len(r.Headers) == 0 {
			c.addNull()
		} else {
			b.hdr, b.keys = appendHeaders(b.hdr[:0], r.Headers, b.keys)
			c.addBytes(b.hdr[len(`,"headers":`):])
		}
	}
	for i := range e.typed {
		c := &cols[next]
		next++
		x := &b.reader.cells[i]
		switch {
		case x.null:
			c.addNull()
		case c.kind == kindBytes:
			c.addBytes(x.b)
		case c.kind == kindDouble:
			c.addValue(math.Float64bits(x.f))
		default:
			c.addValue(uint64(x.i))
		}
	}
	if !e.opts.OmitPayload {
		text, b64 := &cols[next], &cols[next+1]
		switch {
		case len(r.Data) == 0:
			text.addNull()
			b64.addNull()
		case isJSON:
			text.addBytes(b.compact)
			b64.addNull()
		case utf8.Valid(r.Data):
			text.addBytes(r.Data)
			b64.addNull()
		default:
			text.addNull()
			b.str = base64.StdEncoding.AppendEncode(b.str[:0], r.Data)
			b64.addBytes(b.str)
		}
	}
}

// addText appends s to a string column, replacing each byte that is not
// valid UTF-8 with U+FFFD, as the JSON formats do.
func addText(c *colData, s string) {
	if utf8.ValidString(s) {
		c.addString(s)
		return
	}
	v := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			v = utf8.AppendRune(v, utf8.RuneError)
		} else {
			v = append(v, s[i:i+size]...)
		}
		i += size
	}
	c.addBytes(v)
}

func (b *parquetBatch) Len() int     { return b.n }
func (b *parquetBatch) Size() int    { return b.size }
func (b *parquetBatch) MemSize() int { return b.mem }

func (b *parquetBatch) DropLast() {
	if !b.canDrop || b.finished {
		return
	}
	for i := range b.cols {
		b.cols[i].dropLast(b.n)
	}
	b.n--
	b.canDrop = false
	b.size, b.mem = b.prevSize, b.prevMem
}

func (b *parquetBatch) Finish() (Body, error) {
	b.canDrop = false
	if b.finished {
		if b.err != nil {
			return Body{}, b.err
		}
		return b.out.body(), nil
	}
	b.finished = true
	var chunks []int64
	chunks, b.err = b.e.write(&b.out, b)
	if b.err != nil {
		b.err = fmt.Errorf("formats: write parquet: %w", b.err)
		return Body{}, b.err
	}
	b.e.learnFrom(b, chunks)
	b.size = int(b.out.len())
	b.mem = b.out.mem
	for i := range b.cols {
		b.mem += b.cols[i].mem()
	}
	return b.out.body(), nil
}

func (b *parquetBatch) Reset() {
	for i := range b.cols {
		b.cols[i].reset()
	}
	b.n = 0
	b.canDrop, b.finished = false, false
	b.out.release()
	b.err = nil
	b.fresh = true
	b.nextProbe = firstProbe
	clear(b.sample)
	for i := range b.ratios {
		b.ratios[i] = priorRatio(b.e.opts.Compression)
	}
	b.measure()
}
