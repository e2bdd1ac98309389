package formats

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// parquetEncoder is the Encoder of the Parquet format; the package
// documentation describes the file.
type parquetEncoder struct {
	opts       Options
	typed      []typedColumn
	firstNames []string // the first step of each typed column's path
	cols       []pcol
	options    []parquet.WriterOption
	codec      compress.Codec

	emptySize int // bytes of a file without rows
	mu        sync.Mutex
	learn     learning
}

// The column positions that do not depend on options: Fields puts the
// envelope's required columns first.
const (
	colStream = iota
	colSubject
	colSequence
	colTimestamp
	firstOptionalCol
)

// colKind is how a column's values are buffered.
type colKind uint8

const (
	kindBytes colKind = iota
	kindInt64
	kindInt32
	kindDouble
	kindBool
)

// width is the size of a value in PLAIN encoding: bytes columns add a
// 4-byte length to each value. A boolean counts one byte here and one bit
// in rawSize.
func (k colKind) width() int64 {
	switch k {
	case kindBytes, kindInt32:
		return 4
	case kindInt64, kindDouble:
		return 8
	}
	return 1
}

// pcol is one column of the schema.
type pcol struct {
	name     string
	kind     colKind
	node     parquet.Node
	optional bool
	dict     bool // dictionary-encoded
	blob     bool // no min and max: they mean nothing and may be large
}

// learning is what the encoder has learned from finished files.
type learning struct {
	// actual is, per column, the bytes of the column chunks of the last
	// files over their values' plain size, used until a batch samples the
	// column; 0 until known.
	actual []float64
	// factor is, per column, the ratio of the column chunks' size to the
	// size that the batch's last sample predicted; 0 until known.
	factor []float64
	// perRowGroup is the bytes outside column chunks (header, footer, page
	// index) per row group; 0 until known.
	perRowGroup float64
}

func newParquetEncoder(opts Options) (Encoder, error) {
	var codec compress.Codec
	switch opts.Compression {
	case Snappy:
		codec = &parquet.Snappy
	case Zstd:
		codec = &parquet.Zstd
	case Gzip:
		codec = &parquet.Gzip
	case None:
		codec = &parquet.Uncompressed
	}
	if err := checkPolicy(opts.OnTypeError); err != nil {
		return nil, err
	}
	if opts.OnTypeError == "" {
		opts.OnTypeError = RejectTypeErrors
	}
	switch {
	case opts.RowGroupSize < 0:
		return nil, fmt.Errorf("formats: row group size %d is negative", opts.RowGroupSize)
	case opts.RowGroupSize == 0:
		opts.RowGroupSize = DefaultRowGroupSize
	}
	typed, err := compileColumns(opts.Columns)
	if err != nil {
		return nil, err
	}
	opts.Columns = append([]Column(nil), opts.Columns...)
	opts.RawDelimiter = nil

	// Every column but stream and subject is PLAIN, the encoding every
	// reader takes; parquet-go would write optional strings as
	// DELTA_LENGTH_BYTE_ARRAY.
	var cols []pcol
	for _, f := range Fields(opts) {
		pc := pcol{name: f.Name, optional: f.Optional, dict: f.dict, blob: f.blob}
		pc.kind, pc.node = leaf(f.Type)
		if f.dict {
			pc.node = parquet.Encoded(pc.node, &parquet.RLEDictionary)
		}
		cols = append(cols, pc)
	}

	group := parquet.Group{}
	names := make([]string, len(cols))
	for i, c := range cols {
		if !c.dict {
			c.node = parquet.Encoded(c.node, &parquet.Plain)
		}
		if c.optional {
			group[c.name] = parquet.Optional(c.node)
		} else {
			group[c.name] = parquet.Required(c.node)
		}
		names[i] = c.name
	}
	schema := parquet.NewSchema("jetlake", newOrderedGroup(group, names))

	options := []parquet.WriterOption{
		schema,
		parquet.Compression(codec),
		parquet.DataPageVersion(1),
		// Page headers would repeat each page's full min and max values
		// four times; the page index has them, truncated.
		parquet.DataPageStatistics(false),
		&parquet.WriterConfig{CreatedBy: "jetlake"},
	}
	for _, c := range cols {
		if c.blob {
			options = append(options, parquet.SkipPageBounds(c.name))
		}
	}
	// The options, not a WriterConfig made of them, go to each writer: a
	// WriterConfig passed as an option ORs its booleans with the defaults,
	// which would turn page statistics back on.
	if _, err := parquet.NewWriterConfig(options...); err != nil {
		return nil, fmt.Errorf("formats: parquet writer: %w", err)
	}
	e := &parquetEncoder{
		opts:    opts,
		typed:   typed,
		cols:    cols,
		options: options,
		codec:   codec,
	}
	for _, c := range typed {
		e.firstNames = append(e.firstNames, c.path[0].name)
	}
	e.learn.actual = make([]float64, len(cols))
	e.learn.factor = make([]float64, len(cols))
	var empty chunks
	if _, err := e.write(&empty, &parquetBatch{cols: make([]colData, len(cols))}); err != nil {
		return nil, fmt.Errorf("formats: parquet writer: %w", err)
	}
	e.emptySize = int(empty.len())
	empty.release()
	return e, nil
}

func (e *parquetEncoder) Ext() string {
	ext, _ := objectType(e.opts)
	return ext
}

func (e *parquetEncoder) ContentType() string {
	_, contentType := objectType(e.opts)
	return contentType
}

// leaf returns how a column of type t is buffered and its parquet type.
func leaf(t ColumnType) (colKind, parquet.Node) {
	switch t {
	case TypeInt64:
		return kindInt64, parquet.Leaf(parquet.Int64Type)
	case TypeInt32:
		return kindInt32, parquet.Leaf(parquet.Int32Type)
	case TypeDouble:
		return kindDouble, parquet.Leaf(parquet.DoubleType)
	case TypeBoolean:
		return kindBool, parquet.Leaf(parquet.BooleanType)
	case TypeTimestamp:
		return kindInt64, parquet.TimestampAdjusted(parquet.Microsecond, true)
	case TypeDate:
		return kindInt32, parquet.Date()
	}
	// TypeString and TypeJSON: compileColumns let no other type through.
	return kindBytes, parquet.String()
}

func (e *parquetEncoder) NewBatch() Batch {
	b := &parquetBatch{
		e:      e,
		cols:   make([]colData, len(e.cols)),
		cells:  make([]cell, len(e.typed)),
		firsts: make([][]byte, len(e.typed)),
		ratios: make([]float64, len(e.cols)),
		sample: make([]float64, len(e.cols)),
	}
	for i, c := range e.cols {
		b.cols[i].kind, b.cols[i].optional, b.cols[i].dict = c.kind, c.optional, c.dict
	}
	b.Reset()
	return b
}

// orderedGroup is a parquet group whose fields keep the order they were
// declared in: parquet.Group sorts them by name.
type orderedGroup struct {
	parquet.Group
	fields []parquet.Field
}

func newOrderedGroup(g parquet.Group, order []string) orderedGroup {
	byName := make(map[string]parquet.Field, len(g))
	for _, f := range g.Fields() {
		byName[f.Name()] = f
	}
	fields := make([]parquet.Field, len(order))
	for i, name := range order {
		fields[i] = byName[name]
	}
	return orderedGroup{Group: g, fields: fields}
}

func (g orderedGroup) Fields() []parquet.Field { return g.fields }

// colData holds the values of one column of a batch.
type colData struct {
	kind     colKind
	optional bool
	dict     bool
	data     []byte   // kindBytes: the values, concatenated
	ends     []int    // kindBytes: where each row's value ends in data
	vals     []uint64 // other kinds: each row's value; float64 bits for doubles
	null     []bool   // optional columns: whether each row's value is null
	raw      int64    // PLAIN-encoded size of the values, without levels
}

func (c *colData) reset() {
	c.data, c.ends, c.vals, c.null, c.raw = c.data[:0], c.ends[:0], c.vals[:0], c.null[:0], 0
}

func (c *colData) addBytes(v []byte) {
	c.data = append(c.data, v...)
	c.ends = append(c.ends, len(c.data))
	if c.optional {
		c.null = append(c.null, false)
	}
	c.raw += 4 + int64(len(v))
}

func (c *colData) addString(s string) {
	c.data = append(c.data, s...)
	c.ends = append(c.ends, len(c.data))
	if c.optional {
		c.null = append(c.null, false)
	}
	c.raw += 4 + int64(len(s))
}

func (c *colData) addValue(v uint64) {
	c.vals = append(c.vals, v)
	if c.optional {
		c.null = append(c.null, false)
	}
	c.raw += c.kind.width()
}

func (c *colData) addNull() {
	if c.kind == kindBytes {
		c.ends = append(c.ends, len(c.data))
	} else {
		c.vals = append(c.vals, 0)
	}
	c.null = append(c.null, true)
}

// dropLast removes row n-1 of the column.
func (c *colData) dropLast(n int) {
	isNull := c.optional && c.null[n-1]
	if c.optional {
		c.null = c.null[:n-1]
	}
	if c.kind != kindBytes {
		c.vals = c.vals[:n-1]
		if !isNull {
			c.raw -= c.kind.width()
		}
		return
	}
	start := 0
	if n > 1 {
		start = c.ends[n-2]
	}
	if !isNull {
		c.raw -= 4 + int64(c.ends[n-1]-start)
	}
	c.data = c.data[:start]
	c.ends = c.ends[:n-1]
}

// bytesAt returns row i's value of a kindBytes column.
func (c *colData) bytesAt(i int) []byte {
	start := 0
	if i > 0 {
		start = c.ends[i-1]
	}
	return c.data[start:c.ends[i]:c.ends[i]]
}

// rawSize is the PLAIN-encoded size of the column's values and definition
// levels (one bit per row, about, once run-length encoded).
func (c *colData) rawSize(n int) int64 {
	raw := c.raw
	if c.kind == kindBool {
		raw /= 8
	}
	if c.optional {
		raw += int64(n) / 8
	}
	return raw
}

// rowRaw is row i's share of rawSize, for cutting row groups.
func (c *colData) rowRaw(i int) int64 {
	if c.optional && c.null[i] {
		return 0
	}
	if c.kind == kindBytes {
		return 4 + int64(len(c.bytesAt(i)))
	}
	return c.kind.width()
}

// mem is the memory the column's values take. It counts lengths, not
// capacities: a batch keeps its slices through Reset for its next file,
// and the budget is about what the files being filled hold.
func (c *colData) mem() int {
	return len(c.data) + 8*len(c.ends) + 8*len(c.vals) + len(c.null)
}

// colOverhead is about what a batch holds per column besides the values
// (slice headers, sampling and estimating state; measured: 200 bytes).
const colOverhead = 200

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
	cells             []cell
	firsts            [][]byte // the values of the first steps of the paths
	compact, str, key []byte   // scratch for the payload, strings and member names
	arena, hdr, probe []byte   // scratch for typed values, headers and samples
	keys              []string
}

// firstProbe is the raw size at which a batch first samples its columns;
// each later sample waits for probeGrowth times more.
const (
	firstProbe  = 64 << 10
	probeGrowth = 8
	maxProbe    = 256 << 10 // bytes of a column a sample compresses
)

func (b *parquetBatch) Append(r *Record) error {
	if b.finished {
		return ErrFinished
	}
	b.canDrop = false // DropLast drops nothing after a failed Append
	if r.Sequence > math.MaxInt64 {
		return fmt.Errorf("formats: sequence %d does not fit a parquet INT64", r.Sequence)
	}
	e := b.e
	isJSON := false
	if len(r.Data) > 0 {
		b.compact, isJSON = appendCompactJSON(b.compact[:0], r.Data)
	}

	// Extract every typed value before the batch changes, so that a
	// rejected record leaves it as it was.
	b.arena = b.arena[:0]
	if isJSON && len(e.typed) > 0 && b.compact[0] == '{' {
		// One scan of the payload finds the first step of every path.
		b.key = members(b.compact, e.firstNames, b.firsts, b.key)
	}
	for i := range e.typed {
		c := &e.typed[i]
		x := cell{null: true}
		if isJSON {
			var v []byte
			var found bool
			if b.compact[0] == '{' {
				if first := b.firsts[i]; first != nil {
					v, b.key, found = lookup(first, c.path[1:], b.key)
				}
			} else {
				v, b.key, found = lookup(b.compact, c.path, b.key)
			}
			if found {
				var reason string
				x, b.str, reason = c.convert(v, b.str)
				if reason != "" {
					if e.opts.OnTypeError == RejectTypeErrors {
						return &TypeError{Column: c.Name, Source: c.Source, Value: truncateValue(v), Reason: reason}
					}
					x = cell{null: true}
				}
				if x.b != nil {
					// x.b points into scratch space that the next column
					// reuses; keep it in the arena.
					start := len(b.arena)
					b.arena = append(b.arena, x.b...)
					x.b = b.arena[start:len(b.arena):len(b.arena)]
				}
			}
		}
		b.cells[i] = x
	}

	b.prevSize, b.prevMem = b.size, b.mem
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
		x := &b.cells[i]
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
	b.n++
	b.canDrop = true
	b.measure()
	return nil
}

// addText appends s to a string column, replacing each byte that is not
// valid UTF-8 with U+FFFD, as the JSON formats do.
func addText(c *colData, s string) {
	if utf8.ValidString(s) {
		c.addString(s)
		return
	}
	start := len(c.data)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			c.data = utf8.AppendRune(c.data, utf8.RuneError)
		} else {
			c.data = append(c.data, s[i:i+size]...)
		}
		i += size
	}
	c.ends = append(c.ends, len(c.data))
	c.raw += 4 + int64(len(c.data)-start)
}

// measure sets size and mem from the batch's content, sampling the columns
// when their size calls for it.
func (b *parquetBatch) measure() {
	e := b.e
	if b.fresh && b.n > 0 {
		b.fresh = false
		e.mu.Lock()
		for i := range b.ratios {
			b.ratios[i] = e.learn.actual[i]
			if b.ratios[i] == 0 {
				b.ratios[i] = priorRatio(e.opts.Compression)
			}
		}
		b.perRowGroup = e.learn.perRowGroup
		e.mu.Unlock()
		if b.perRowGroup == 0 {
			// Chunk metadata with statistics and the page index: about
			// 200 bytes per column.
			b.perRowGroup = 200 * float64(len(b.cols))
		}
	}
	var raw int64
	for i := range b.cols {
		raw += b.cols[i].rawSize(b.n)
	}
	if raw >= b.nextProbe && b.n > 0 {
		b.calibrate(raw)
	}
	est := b.overhead(raw)
	mem := b.out.mem
	if b.n > 0 {
		mem += colOverhead * len(b.cols)
	}
	for i := range b.cols {
		c := &b.cols[i]
		est += float64(c.rawSize(b.n)) * b.ratios[i]
		mem += c.mem()
	}
	b.size, b.mem = int(est+0.5), mem
}

// overhead estimates the bytes of the file outside its column chunks: the
// file without rows, and the metadata of each row group.
func (b *parquetBatch) overhead(raw int64) float64 {
	e := b.e
	if b.n == 0 {
		return float64(e.emptySize)
	}
	groups := 1 + raw/e.opts.RowGroupSize
	return float64(e.emptySize) + b.perRowGroup*float64(groups)
}

// priorRatio is a guess of how well a codec compresses column values, for
// the start of the first batch, before the first sample.
func priorRatio(c Compression) float64 {
	switch c {
	case None:
		return 1
	case Snappy:
		return 0.5
	}
	return 0.3
}

// calibrate compresses a sample of every column, the last maxProbe bytes of
// their plain encoding, and estimates with the ratios found, adjusted by
// what the encoder learned about how samples compare with files.
func (b *parquetBatch) calibrate(raw int64) {
	e := b.e
	for b.nextProbe <= raw {
		b.nextProbe *= probeGrowth
	}
	for i := range b.cols {
		c := &b.cols[i]
		if c.dict {
			b.sample[i] = c.dictSample(b.n)
		} else {
			plain := c.appendSample(b.probe[:0], b.n)
			if len(plain) < 64 {
				continue
			}
			packed, err := e.codec.Encode(b.str[:0], plain)
			b.probe, b.str = plain, packed
			if err != nil {
				continue
			}
			b.sample[i] = float64(len(packed)) / float64(len(plain))
		}
		e.mu.Lock()
		f := e.learn.factor[i]
		e.mu.Unlock()
		if f == 0 {
			f = 1
		}
		b.ratios[i] = b.sample[i] * f
	}
}

// dictSample estimates the ratio of the dictionary encoding of the column's
// last values, up to maxProbe bytes, to their PLAIN encoding: each distinct
// value once, and an index of as many bits as the distinct values need for
// each row. (The indexes are run-length encoded: a column of one value
// costs next to nothing.)
func (c *colData) dictSample(n int) float64 {
	distinct := make(map[string]struct{})
	var plain, dict int
	i := n
	for ; i > 0 && plain < maxProbe; i-- {
		v := c.bytesAt(i - 1)
		plain += 4 + len(v)
		if _, ok := distinct[string(v)]; !ok {
			distinct[string(v)] = struct{}{}
			dict += 4 + len(v)
		}
	}
	bits := 0
	for 1<<bits < len(distinct) {
		bits++
	}
	return float64(dict+(n-i)*bits/8) / float64(plain)
}

// appendSample appends the PLAIN encoding of the column's last values, up
// to maxProbe bytes, to dst.
func (c *colData) appendSample(dst []byte, n int) []byte {
	if c.kind == kindBytes {
		i := n
		for size := 0; i > 0 && size < maxProbe; {
			i--
			size += 4 + len(c.bytesAt(i))
		}
		for ; i < n; i++ {
			if c.optional && c.null[i] {
				continue
			}
			v := c.bytesAt(i)
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
			dst = append(dst, v...)
		}
		return dst
	}
	for i := max(0, n-int(maxProbe/c.kind.width())); i < n; i++ {
		if c.optional && c.null[i] {
			continue
		}
		v := c.vals[i]
		switch c.kind {
		case kindInt64, kindDouble:
			dst = binary.LittleEndian.AppendUint64(dst, v)
		case kindInt32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		default:
			dst = append(dst, byte(v))
		}
	}
	return dst
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

// rowGroupRows is how many values Finish hands the parquet writer at once.
const rowGroupRows = 1024

// write appends the parquet file of b's rows to out. It returns the size of
// each column's chunks, summed over the row groups.
func (e *parquetEncoder) write(out *chunks, b *parquetBatch) ([]int64, error) {
	// A writer is not reused: after Reset, parquet-go v0.32.0 writes column
	// chunks without their path_in_schema.
	w := parquet.NewWriter(out, e.options...)
	if cap(b.values) < rowGroupRows {
		b.values = make([]parquet.Value, rowGroupRows)
	}
	for lo := 0; lo < b.n; {
		hi, size := lo, int64(0)
		for hi < b.n && size < e.opts.RowGroupSize {
			for i := range b.cols {
				size += b.cols[i].rowRaw(hi)
			}
			hi++
		}
		columns := w.ColumnWriters()
		for ci := range b.cols {
			if err := b.writeColumn(columns[ci], ci, lo, hi); err != nil {
				return nil, err
			}
		}
		if err := w.Flush(); err != nil {
			return nil, err
		}
		lo = hi
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	chunks := make([]int64, len(b.cols))
	for _, rg := range w.File().Metadata().RowGroups {
		for ci := range rg.Columns {
			chunks[ci] += rg.Columns[ci].MetaData.TotalCompressedSize
		}
	}
	clear(b.values) // values point into the batch's memory
	return chunks, nil
}

// writeColumn writes rows [lo, hi) of column ci.
func (b *parquetBatch) writeColumn(w *parquet.ColumnWriter, ci, lo, hi int) error {
	c := &b.cols[ci]
	def := 0
	if c.optional {
		def = 1
	}
	values := b.values[:rowGroupRows]
	for lo < hi {
		n := min(hi-lo, len(values))
		for j := range n {
			i := lo + j
			var v parquet.Value
			switch {
			case c.optional && c.null[i]:
				values[j] = parquet.NullValue().Level(0, 0, ci)
				continue
			case c.kind == kindBytes:
				v = parquet.ByteArrayValue(c.bytesAt(i))
			case c.kind == kindInt64:
				v = parquet.Int64Value(int64(c.vals[i]))
			case c.kind == kindInt32:
				v = parquet.Int32Value(int32(c.vals[i]))
			case c.kind == kindDouble:
				v = parquet.DoubleValue(math.Float64frombits(c.vals[i]))
			default:
				v = parquet.BooleanValue(c.vals[i] != 0)
			}
			values[j] = v.Level(0, def, ci)
		}
		if _, err := w.WriteRowValues(values[:n]); err != nil {
			return err
		}
		lo += n
	}
	return nil
}

// learnFrom updates what the encoder knows from the file of b, whose
// column chunks have the given sizes. Only columns with enough data to
// say something teach it.
func (e *parquetEncoder) learnFrom(b *parquetBatch, chunks []int64) {
	const minRaw = 16 << 10
	var total, raw int64
	for ci := range b.cols {
		total += chunks[ci]
		raw += b.cols[ci].rawSize(b.n)
	}
	groups := 1 + raw/e.opts.RowGroupSize
	e.mu.Lock()
	defer e.mu.Unlock()
	for ci := range b.cols {
		r := b.cols[ci].rawSize(b.n)
		if r < minRaw {
			continue
		}
		actual := float64(chunks[ci]) / float64(r)
		e.learn.actual[ci] = blend(e.learn.actual[ci], actual)
		if s := b.sample[ci]; s > 0 {
			e.learn.factor[ci] = blend(e.learn.factor[ci], actual/s)
		}
	}
	if b.n > 0 {
		e.learn.perRowGroup = blend(e.learn.perRowGroup, float64(b.out.len()-int64(e.emptySize)-total)/float64(groups))
	}
}

// blend folds x into a running average that was old (0: none yet).
func blend(old, x float64) float64 {
	if old == 0 {
		return x
	}
	return (old + x) / 2
}
