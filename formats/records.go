package formats

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	pqformat "github.com/parquet-go/parquet-go/format"
)

// ErrNoEnvelope says an object's records carry no stream, subject,
// sequence or timestamp: JSON records written without Options.Metadata,
// which are the payload alone, and raw objects, which hold payloads only.
var ErrNoEnvelope = errors.New("records carry no stream sequence: written without include_metadata")

// ErrNoPayload says a parquet file has neither a payload nor a
// payload_base64 column: it was written with Options.OmitPayload, and the
// messages cannot be read back from it.
var ErrNoPayload = errors.New("parquet file has no payload columns: written with keep_payload = false")

// maxRecordSize is the longest JSON record (a json_lines line or a
// json_array element) ReadRecords reads. The encoder writes a record of any
// size; a message is at most NATS's max_payload (64 MiB at most), a quarter
// more as base64.
const maxRecordSize = 1 << 30

// readBufferSize is how many bytes ReadRecords asks its io.ReaderAt for at
// once: for JSON objects, and for each column of a parquet file.
const readBufferSize = 256 << 10

// parquetBatchRows is how many values of each column ReadRecords decodes at
// once from a parquet file.
const parquetBatchRows = 256

// ReadRecords calls fn with every record of an object this package wrote,
// in the order written, reading the object named key (its extension names
// format and compression, as ObjectType gives it: "jsonl", "json.gz",
// "parquet", ...) from r, size bytes long.
//
// The *Record passed to fn, and the memory of its Data and Headers, may be
// reused once fn returns: fn copies what it keeps. An error fn returns stops
// the read, and ReadRecords returns it as it is, not wrapped. Every other
// error starts with key and, when it is about one record, names its line
// (json_lines), element (json_array) or row (parquet), counted from 1.
//
// The object is read as a stream, never whole. A JSON object is read
// record by record, through a decompressor for ".gz" and ".zst", holding
// one record at a time; a record longer than 1 GiB is an error, and a zstd
// frame may take a window of up to that much more. A parquet file is read
// a few hundred values of each envelope column at a time, one page of each
// in memory, skipping the typed columns.
//
// What a record gives back depends on the format:
//
//   - json_lines and json_array, written with Options.Metadata: Stream,
//     Subject, Sequence and Time (in UTC, to the nanosecond) as written,
//     and Headers (with Options.Headers) when the message had some, nil
//     otherwise. Data is the payload as the object holds it: a payload that
//     was one JSON value comes back as that value compacted, byte for byte
//     as the encoder wrote it (insignificant whitespace removed, numbers and
//     string escapes unchanged); any other payload comes back byte for byte,
//     from its base64; an empty payload comes back nil. A payload that was
//     the JSON literal null, written as the null of an empty payload, also
//     comes back nil. A record written with Options.ExactPayload that
//     carries payload_original gives its bytes instead: so with that
//     option every payload comes back byte for byte, JSON and null
//     included. A payload_original whose bytes, compacted, are not the
//     payload is an error, as a record would be whose payload was edited
//     without it. Objects written without Options.Metadata hold payloads
//     only: the error wraps ErrNoEnvelope.
//   - parquet: Stream, Subject and Sequence as written, and Time to the
//     microsecond (the file holds no more) in UTC; Headers from the headers
//     column (with Options.Headers), nil where it is null. Data is the
//     payload column when it is not null, the payload_base64 column decoded
//     when that is not null, nil otherwise. The encoder writes a JSON
//     payload compacted in the payload column, as the JSON formats do (a
//     JSON null stays the text null), other valid UTF-8 byte for byte, and
//     anything else as base64: so Data is compacted for JSON payloads and
//     byte for byte for all others. A file written with Options.OmitPayload
//     has neither payload column: the error wraps ErrNoPayload. Typed
//     columns are ignored.
//   - raw objects hold payloads only, with no record boundaries: the error
//     wraps ErrNoEnvelope.
//
// Stream names, subjects and headers come back as the object holds them:
// bytes that were not valid UTF-8 were written as U+FFFD.
func ReadRecords(key string, r io.ReaderAt, size int64, fn func(*Record) error) error {
	return readRecords(key, r, size, fn, maxRecordSize)
}

// readRecords is ReadRecords with the longest JSON record it reads.
func readRecords(key string, r io.ReaderAt, size int64, fn func(*Record) error, maxRecord int) error {
	format, compression, ok := objectKind(key)
	if !ok {
		return fmt.Errorf("%s: not an object this package writes: want an extension such as .jsonl, .json.gz or .parquet", key)
	}
	if size < 0 {
		return fmt.Errorf("%s: negative size %d", key, size)
	}
	switch format {
	case Raw:
		return fmt.Errorf("%s: raw objects hold payloads only: %w", key, ErrNoEnvelope)
	case Parquet:
		return readParquetRecords(key, r, size, fn)
	}
	src, closeSrc, err := decompressor(compression, io.NewSectionReader(r, 0, size), maxRecord)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	defer closeSrc()
	jr := &jsonRecords{key: key, fn: fn}
	if format == JSONArray {
		return jr.readArray(src, maxRecord)
	}
	return jr.readLines(src, maxRecord)
}

// objectKind returns the format and compression that key's extension
// names, as objectType gives them.
func objectKind(key string) (Format, Compression, bool) {
	if strings.HasSuffix(key, ".parquet") {
		return Parquet, "", true
	}
	compression := None
	switch {
	case strings.HasSuffix(key, ".gz"):
		compression, key = Gzip, strings.TrimSuffix(key, ".gz")
	case strings.HasSuffix(key, ".zst"):
		compression, key = Zstd, strings.TrimSuffix(key, ".zst")
	}
	switch {
	case strings.HasSuffix(key, ".jsonl"):
		return JSONLines, compression, true
	case strings.HasSuffix(key, ".json"):
		return JSONArray, compression, true
	case strings.HasSuffix(key, ".bin"):
		return Raw, compression, true
	}
	return "", "", false
}

// decompressor returns a reader of the uncompressed bytes of src, and what
// releases it.
func decompressor(c Compression, src *io.SectionReader, maxRecord int) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(src, readBufferSize)
	switch c {
	case Gzip:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err // it says gzip
		}
		return zr, func() { _ = zr.Close() }, nil
	case Zstd:
		zr, err := zstd.NewReader(br,
			zstd.WithDecoderConcurrency(1), // synchronous: no goroutines
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(zstdWindow(src.Size(), maxRecord)),
			zstd.WithDecoderMaxWindow(zstdWindow(src.Size(), maxRecord)),
		)
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return zr, zr.Close, nil
	}
	return br, func() {}, nil
}

// zstdWindow is the largest window a zstd frame of an object of size bytes
// may have. The decoder allocates the window a frame's header declares
// before it decodes a block: bounding it bounds what a corrupt header makes
// it allocate. The encoder writes a frame per chunk, whose window is its
// content: about chunkSize, or a record and what came before it in its
// chunk. Frames of other encoders have windows of a few MiB. And a frame's
// content is at most 32 KiB per byte of the object (a block of 4 bytes
// yields at most 128 KiB), so a larger window is a corrupt one.
func zstdWindow(size int64, maxRecord int) uint64 {
	const perByte, others = 32 << 10, 8 << 20
	window := uint64(maxRecord) + 2*chunkSize
	if size < int64(window/perByte) {
		window = max(uint64(size)*perByte, others)
	}
	return window
}

// jsonRecords reads the records of a json_lines or json_array object.
type jsonRecords struct {
	key     string
	fn      func(*Record) error
	rec     Record
	env     envelope
	strs    envelopeStrings // what env points at, read by scanEnvelope
	data    []byte          // the decoded base64 payload
	compact []byte          // payload_original compacted, to check it
}

// envelope is a JSON record written with Options.Metadata.
type envelope struct {
	Stream          *string             `json:"stream"`
	Subject         *string             `json:"subject"`
	Sequence        *uint64             `json:"sequence"`
	Timestamp       *string             `json:"timestamp"`
	Headers         map[string][]string `json:"headers"`
	Payload         json.RawMessage     `json:"payload"` // empty when absent, "null" when null
	PayloadEncoding *string             `json:"payload_encoding"`
	PayloadOriginal json.RawMessage     `json:"payload_original"` // empty when absent
}

// errFnStop wraps the error fn returned, so that it passes the framing
// below unchanged.
type errFnStop struct{ err error }

func (e errFnStop) Error() string { return e.err.Error() }

// jsonSpace is the whitespace JSON allows between tokens.
const jsonSpace = " \t\r\n"

// readLines reads a json_lines body: one record per line. A last line
// without its newline is read too; lines of whitespace are skipped.
func (jr *jsonRecords) readLines(src io.Reader, maxRecord int) error {
	br, ok := src.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(src, readBufferSize)
	}
	var long []byte // a line longer than br's buffer
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				if len(long)+len(line) > maxRecord+1 { // +1: the newline
					return fmt.Errorf("%s: line %d is longer than %d bytes", jr.key, n, maxRecord)
				}
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: line %d: %w", jr.key, n, err)
		}
		if len(line) > maxRecord+1 {
			return fmt.Errorf("%s: line %d is longer than %d bytes", jr.key, n, maxRecord)
		}
		if rec := bytes.TrimSuffix(line, []byte("\n")); len(bytes.Trim(rec, jsonSpace)) > 0 {
			if err := jr.record(rec, "line", n); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// readArray reads a json_array body: one record per element of one array.
func (jr *jsonRecords) readArray(src io.Reader, maxRecord int) error {
	lr := &stopReader{r: src, stop: int64(maxRecord) + elementSlack}
	dec := json.NewDecoder(lr)
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", jr.key, err)
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("%s: not a JSON array: starts with %v", jr.key, tok)
	}
	var elem json.RawMessage
	for n := 1; ; n++ {
		// The decoder buffers what an element spans: the comma and the
		// whitespace before it, the element, and after a number the byte
		// that ends it.
		lr.stop = dec.InputOffset() + int64(maxRecord) + elementSlack
		if !dec.More() {
			break
		}
		if err := dec.Decode(&elem); err != nil {
			if errors.Is(err, errTooLong) {
				return fmt.Errorf("%s: element %d is longer than %d bytes", jr.key, n, maxRecord)
			}
			return fmt.Errorf("%s: element %d: %w", jr.key, n, err)
		}
		if err := jr.record(elem, "element", n); err != nil {
			return err
		}
	}
	lr.stop = -1
	if _, err := dec.Token(); err != nil { // the closing bracket
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%s: %w", jr.key, err)
	}
	if tok, err := dec.Token(); err != io.EOF { // nothing after the array; a gzip stream's checksum
		if err == nil {
			err = fmt.Errorf("%v after the array", tok)
		}
		return fmt.Errorf("%s: %w", jr.key, err)
	}
	return nil
}

// elementSlack is how many bytes more than an element of json_array a
// decoder may need to read it.
const elementSlack = 64

// errTooLong is what stopReader returns at its stop.
var errTooLong = errors.New("record too long")

// stopReader reads r up to an offset, stop, that its user moves, and then
// returns errTooLong; with a negative stop it reads r to its end.
type stopReader struct {
	r    io.Reader
	read int64 // bytes read so far
	stop int64
}

func (s *stopReader) Read(p []byte) (int, error) {
	if s.stop >= 0 {
		left := s.stop - s.read
		if left <= 0 {
			return 0, errTooLong
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := s.r.Read(p)
	s.read += int64(n)
	return n, err
}

// record decodes one JSON record, the n-th (counted from 1) of its kind of
// unit (line or element), and calls fn with it.
func (jr *jsonRecords) record(b []byte, unit string, n int) error {
	if err := jr.decode(b); err != nil {
		return fmt.Errorf("%s: %s %d: %w", jr.key, unit, n, err)
	}
	return jr.fn(&jr.rec)
}

// decode sets jr.rec from the JSON record b.
func (jr *jsonRecords) decode(b []byte) error {
	if b = bytes.TrimLeft(b, jsonSpace); len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("not a JSON object: %w", ErrNoEnvelope)
	}
	env := &jr.env
	*env = envelope{Payload: env.Payload[:0], PayloadOriginal: env.PayloadOriginal[:0]}
	if !scanEnvelope(b, env, &jr.strs) {
		*env = envelope{Payload: env.Payload[:0], PayloadOriginal: env.PayloadOriginal[:0]}
		if err := json.Unmarshal(b, env); err != nil {
			return err
		}
	}
	switch {
	case env.Sequence == nil:
		return fmt.Errorf("no sequence: %w", ErrNoEnvelope)
	case env.Stream == nil:
		return errors.New("no stream")
	case env.Subject == nil:
		return errors.New("no subject")
	case env.Timestamp == nil:
		return errors.New("no timestamp")
	case len(env.Payload) == 0:
		return errors.New("no payload")
	}
	t, err := time.Parse(time.RFC3339Nano, *env.Timestamp)
	if err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	rec := &jr.rec
	*rec = Record{
		Stream:   *env.Stream,
		Subject:  *env.Subject,
		Sequence: *env.Sequence,
		Time:     t.UTC(),
		Headers:  env.Headers,
	}
	switch {
	case env.PayloadEncoding != nil:
		switch {
		case *env.PayloadEncoding != "base64":
			return fmt.Errorf("unknown payload_encoding %q", *env.PayloadEncoding)
		case len(env.PayloadOriginal) > 0:
			return errors.New("payload_original beside payload_encoding: the payload is its bytes already")
		case !isJSONString(env.Payload):
			return errors.New("payload_encoding is base64, but the payload is not a string")
		}
		if rec.Data, err = jr.decodeBase64("payload", env.Payload); err != nil {
			return err
		}
	case len(env.PayloadOriginal) > 0:
		if rec.Data, err = jr.original(env.Payload, env.PayloadOriginal); err != nil {
			return err
		}
	case string(env.Payload) != "null":
		rec.Data = env.Payload
	}
	return nil
}

// original returns the bytes of a payload that payload_original holds,
// checking that they compact to the payload field: a payload edited
// without its original must not come back as it was before.
func (jr *jsonRecords) original(payload, original json.RawMessage) ([]byte, error) {
	if !isJSONString(original) {
		return nil, errors.New("payload_original is not a string")
	}
	data, err := jr.decodeBase64("payload_original", original)
	if err != nil {
		return nil, err
	}
	var ok bool
	jr.compact, ok = appendCompactJSON(jr.compact[:0], data)
	if !ok || !bytes.Equal(jr.compact, payload) {
		return nil, errors.New("payload_original does not hold the payload: its bytes, compacted, differ from the payload field")
	}
	return data, nil
}

// isJSONString reports whether the JSON value p is a string.
func isJSONString(p json.RawMessage) bool {
	return len(p) >= 2 && p[0] == '"'
}

// decodeBase64 returns the bytes of the JSON string p holding base64, the
// value of field.
func (jr *jsonRecords) decodeBase64(field string, p json.RawMessage) ([]byte, error) {
	var text []byte
	if bytes.IndexByte(p, '\\') < 0 {
		text = p[1 : len(p)-1]
	} else { // escaped, which the encoder never writes
		var s string
		if err := json.Unmarshal(p, &s); err != nil {
			return nil, err
		}
		text = []byte(s)
	}
	data, err := base64.StdEncoding.AppendDecode(jr.data[:0], text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	jr.data = data
	if len(data) == 0 {
		return nil, nil
	}
	return data, nil
}

// pqColumn is a column of a parquet file that ReadRecords reads.
type pqColumn struct {
	name  string
	index int // in the file's leaf columns; -1 when the file does not have it
	vals  parquet.ColumnChunkValueReader
	buf   []parquet.Value
	next  int // buf[next:] is still to be read
}

// readParquetRecords is ReadRecords for a parquet file.
func readParquetRecords(key string, r io.ReaderAt, size int64, fn func(*Record) error) error {
	f, err := openParquet(r, size)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	l, err := layoutOf(f.Schema())
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	var rec Record
	var data []byte
	row := 0
	for _, rg := range f.RowGroups() {
		err := func() error {
			defer closeColumns(l.used)
			if err := openColumns(rg, l.used); err != nil {
				return fmt.Errorf("%s: row %d: %w", key, row+1, err)
			}
			for range rg.NumRows() {
				row++
				if data, err = l.readRow(&rec, data); err != nil {
					return fmt.Errorf("%s: row %d: %w", key, row, err)
				}
				if err := fn(&rec); err != nil {
					return errFnStop{err}
				}
			}
			return nil
		}()
		if stop, ok := err.(errFnStop); ok {
			return stop.err
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pqLayout is where a parquet file jetlake wrote keeps a record's fields:
// its columns in the order of Record's (stream, subject, sequence,
// timestamp, headers, payload, payload_base64), the first four required,
// and the unit of its timestamps.
type pqLayout struct {
	cols []*pqColumn
	used []*pqColumn // those the file has
	unit time.Duration
}

// Indexes into pqLayout.cols.
const (
	pqStream = iota
	pqSubject
	pqSequence
	pqTimestamp
	pqHeaders
	pqPayload
	pqPayload64
	pqColumns
)

// layoutOf finds a record's columns in schema, and checks their types: a
// missing required column, a column of another type, a nested or repeated
// one, or a file with neither payload column is refused.
func layoutOf(schema *parquet.Schema) (*pqLayout, error) {
	l := &pqLayout{cols: []*pqColumn{
		{name: "stream"}, {name: "subject"}, {name: "sequence"}, {name: "timestamp"},
		{name: "headers"}, {name: "payload"}, {name: "payload_base64"},
	}}
	for i, c := range l.cols {
		c.index = -1
		leaf, ok := schema.Lookup(c.name)
		if !ok {
			if i <= pqTimestamp {
				return nil, fmt.Errorf("no %s column", c.name)
			}
			continue
		}
		want := parquet.ByteArray
		if i == pqSequence || i == pqTimestamp {
			want = parquet.Int64
		}
		typ := leaf.Node.Type()
		if typ.Kind() != want || leaf.MaxRepetitionLevel != 0 || len(leaf.Path) != 1 {
			return nil, fmt.Errorf("column %s is not a %s", c.name, want)
		}
		if i == pqTimestamp {
			if l.unit = timestampUnit(typ); l.unit == 0 {
				return nil, errors.New("column timestamp is not a TIMESTAMP")
			}
		}
		c.index = leaf.ColumnIndex
	}
	if l.cols[pqPayload].index < 0 && l.cols[pqPayload64].index < 0 {
		return nil, ErrNoPayload
	}
	for _, c := range l.cols {
		if c.index >= 0 {
			c.buf = make([]parquet.Value, parquetBatchRows)
			l.used = append(l.used, c)
		}
	}
	return l, nil
}

// readRow reads the next row of the open columns into rec, its payload into
// data (returned, to be reused).
func (l *pqLayout) readRow(rec *Record, data []byte) ([]byte, error) {
	var vals [pqColumns]parquet.Value
	for i, c := range l.cols {
		if c.index < 0 {
			continue
		}
		v, err := c.read()
		if err != nil {
			return data, err
		}
		if v.IsNull() && i <= pqTimestamp {
			return data, fmt.Errorf("%s is null", c.name)
		}
		vals[i] = v
	}
	rec.Stream = reuseString(rec.Stream, vals[pqStream].ByteArray())
	rec.Subject = reuseString(rec.Subject, vals[pqSubject].ByteArray())
	seq := vals[pqSequence].Int64()
	if seq < 0 {
		return data, fmt.Errorf("sequence %d is negative", seq)
	}
	rec.Sequence = uint64(seq)
	rec.Time = timeIn(vals[pqTimestamp].Int64(), l.unit)
	rec.Headers = nil
	if l.cols[pqHeaders].index >= 0 && !vals[pqHeaders].IsNull() {
		if err := json.Unmarshal(vals[pqHeaders].ByteArray(), &rec.Headers); err != nil {
			return data, fmt.Errorf("headers: %w", err)
		}
	}
	rec.Data = nil
	switch {
	case l.cols[pqPayload].index >= 0 && !vals[pqPayload].IsNull():
		data = append(data[:0], vals[pqPayload].ByteArray()...)
		rec.Data = data
	case l.cols[pqPayload64].index >= 0 && !vals[pqPayload64].IsNull():
		var err error
		if data, err = base64.StdEncoding.AppendDecode(data[:0], vals[pqPayload64].ByteArray()); err != nil {
			return data, fmt.Errorf("payload_base64: %w", err)
		}
		rec.Data = data
	}
	if len(rec.Data) == 0 {
		rec.Data = nil
	}
	return data, nil
}

// openParquet opens the parquet file of r. It checks the footer's length
// before parquet-go allocates it, and turns parquet-go's panics on corrupt
// files into errors.
func openParquet(r io.ReaderAt, size int64) (f *parquet.File, err error) {
	if size < 12 {
		return nil, errors.New("not a parquet file: too short")
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, err
	}
	if footer := int64(binary.LittleEndian.Uint32(tail[:4])); footer > size-12 {
		return nil, fmt.Errorf("not a parquet file: a footer of %d bytes in %d", footer, size)
	}
	defer recoverCorrupt(&err)
	return parquet.OpenFile(r, size,
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(readBufferSize),
	)
}

// recoverCorrupt turns a panic of parquet-go into an error in *err.
func recoverCorrupt(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("corrupt parquet file: %v", p)
	}
}

// openColumns starts reading cols in row group rg.
func openColumns(rg parquet.RowGroup, cols []*pqColumn) (err error) {
	defer recoverCorrupt(&err)
	chunks := rg.ColumnChunks()
	for _, c := range cols {
		if c.index >= len(chunks) {
			return fmt.Errorf("no column chunk for %s", c.name)
		}
		c.vals = parquet.NewColumnChunkValueReader(chunks[c.index])
		c.buf, c.next = c.buf[:0], 0
	}
	return nil
}

// closeColumns releases the readers openColumns started.
func closeColumns(cols []*pqColumn) {
	for _, c := range cols {
		if c.vals != nil {
			func() {
				defer func() { _ = recover() }()
				_ = c.vals.Close()
			}()
			c.vals = nil
		}
	}
}

// read returns the column's next value. It is valid until the next read.
func (c *pqColumn) read() (v parquet.Value, err error) {
	if c.next == len(c.buf) {
		if err := c.fill(); err != nil {
			return v, err
		}
	}
	v = c.buf[c.next]
	c.next++
	return v, nil
}

// fill reads the next values of the column into c.buf.
func (c *pqColumn) fill() (err error) {
	defer recoverCorrupt(&err)
	n, err := c.vals.ReadValues(c.buf[:cap(c.buf)])
	c.buf, c.next = c.buf[:n], 0
	switch {
	case n > 0:
		return nil
	case err == io.EOF:
		return fmt.Errorf("column %s ends before the row group", c.name)
	case err != nil:
		return fmt.Errorf("column %s: %w", c.name, err)
	}
	return fmt.Errorf("column %s: %w", c.name, io.ErrNoProgress)
}

// timestampUnit returns the unit of a TIMESTAMP column's values, 0 when t
// is not a timestamp.
func timestampUnit(t parquet.Type) time.Duration {
	lt := t.LogicalType()
	if lt == nil {
		return 0
	}
	ts, ok := lt.Value.(*pqformat.TimestampType)
	if !ok || ts.Unit.Value == nil {
		return 0
	}
	switch d := ts.Unit.Value.Duration(); d {
	case time.Millisecond, time.Microsecond, time.Nanosecond:
		return d
	}
	return 0
}

// timeIn returns the time v units after the Unix epoch, in UTC.
func timeIn(v int64, unit time.Duration) time.Time {
	switch unit {
	case time.Millisecond:
		return time.UnixMilli(v).UTC()
	case time.Microsecond:
		return time.UnixMicro(v).UTC()
	}
	return time.Unix(0, v).UTC()
}

// reuseString returns s when it holds b, a new string otherwise: a file's
// rows mostly repeat their stream and subject.
func reuseString(s string, b []byte) string {
	if s == string(b) {
		return s
	}
	return string(b)
}
