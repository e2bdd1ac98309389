package formats

import (
	"fmt"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// parquetEncoder is the Encoder of the Parquet format; the package
// documentation describes the file.
type parquetEncoder struct {
	opts    Options
	typed   []typedColumn
	cols    []pcol
	options []parquet.WriterOption
	codec   compress.Codec

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

// pcol is one column of the schema.
type pcol struct {
	name     string
	kind     colKind
	node     parquet.Node
	optional bool
	dict     bool // dictionary-encoded
	blob     bool // no min and max: they mean nothing and may be large
}

// newParquetEncoder checks opts and prepares what every batch of the
// encoder shares: the schema, the writer options and the size of an empty
// file.
func newParquetEncoder(opts Options) (Encoder, error) {
	codec := parquetCodec(opts.Compression)
	opts, typed, err := resolveParquetOptions(opts)
	if err != nil {
		return nil, err
	}
	cols := parquetColumns(opts)
	schema, err := parquetSchema(cols, opts.FieldIDs)
	if err != nil {
		return nil, err
	}
	options, err := parquetWriterOptions(schema, codec, cols)
	if err != nil {
		return nil, err
	}
	e := &parquetEncoder{
		opts:    opts,
		typed:   typed,
		cols:    cols,
		options: options,
		codec:   codec,
	}
	e.learn.actual = make([]float64, len(cols))
	e.learn.factor = make([]float64, len(cols))
	if e.emptySize, err = e.emptyFileSize(); err != nil {
		return nil, err
	}
	return e, nil
}

// parquetCodec returns the page codec of compression c.
func parquetCodec(c Compression) compress.Codec {
	switch c {
	case Snappy:
		return &parquet.Snappy
	case Zstd:
		return &parquet.Zstd
	case Gzip:
		return &parquet.Gzip
	case None:
		return &parquet.Uncompressed
	}
	return nil
}

// resolveParquetOptions checks the parquet settings of opts and fills in
// their defaults. It returns opts as the encoder keeps them, with a copy of
// Columns and no RawDelimiter, and the typed columns ready to extract.
func resolveParquetOptions(opts Options) (Options, []typedColumn, error) {
	if err := checkPolicy(opts.OnTypeError); err != nil {
		return opts, nil, err
	}
	if opts.OnTypeError == "" {
		opts.OnTypeError = RejectTypeErrors
	}
	switch {
	case opts.RowGroupSize < 0:
		return opts, nil, fmt.Errorf("formats: row group size %d is negative", opts.RowGroupSize)
	case opts.RowGroupSize == 0:
		opts.RowGroupSize = DefaultRowGroupSize
	}
	typed, err := compileColumns(opts.Columns)
	if err != nil {
		return opts, nil, err
	}
	opts.Columns = append([]Column(nil), opts.Columns...)
	opts.RawDelimiter = nil
	return opts, typed, nil
}

// parquetColumns returns the columns of the file opts describe, in order,
// each with its buffer kind and parquet type; the dictionary-encoded ones
// (stream and subject) are already marked so.
func parquetColumns(opts Options) []pcol {
	var cols []pcol
	for _, f := range Fields(opts) {
		pc := pcol{name: f.Name, optional: f.Optional, dict: f.dict, blob: f.blob}
		pc.kind, pc.node = leaf(f.Type)
		if f.dict {
			pc.node = parquet.Encoded(pc.node, &parquet.RLEDictionary)
		}
		cols = append(cols, pc)
	}
	return cols
}

// parquetSchema returns the schema of cols, in their order, with the field
// ids of fieldIDs when it is not nil; then every column must have one.
// Every column but the dictionary-encoded ones is PLAIN, the encoding every
// reader takes; parquet-go would write optional strings as
// DELTA_LENGTH_BYTE_ARRAY.
func parquetSchema(cols []pcol, fieldIDs map[string]int) (*parquet.Schema, error) {
	group := parquet.Group{}
	names := make([]string, len(cols))
	for i, c := range cols {
		if !c.dict {
			c.node = parquet.Encoded(c.node, &parquet.Plain)
		}
		if c.optional {
			c.node = parquet.Optional(c.node)
		} else {
			c.node = parquet.Required(c.node)
		}
		if fieldIDs != nil {
			id, ok := fieldIDs[c.name]
			if !ok {
				return nil, fmt.Errorf("formats: column %s has no field id", c.name)
			}
			c.node = parquet.FieldID(c.node, id)
		}
		group[c.name] = c.node
		names[i] = c.name
	}
	return parquet.NewSchema("jetlake", newOrderedGroup(group, names)), nil
}

// parquetWriterOptions returns the options every writer of the encoder
// takes: deterministic settings, and no page bounds for blob columns.
//
// The options, not a WriterConfig made of them, go to each writer: a
// WriterConfig passed as an option ORs its booleans with the defaults,
// which would turn page statistics back on.
func parquetWriterOptions(schema *parquet.Schema, codec compress.Codec, cols []pcol) ([]parquet.WriterOption, error) {
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
	if _, err := parquet.NewWriterConfig(options...); err != nil {
		return nil, fmt.Errorf("formats: parquet writer: %w", err)
	}
	return options, nil
}

// emptyFileSize writes a file without rows and returns its size: the part
// of every file that does not grow with its rows.
func (e *parquetEncoder) emptyFileSize() (int, error) {
	var empty chunks
	if _, err := e.write(&empty, &parquetBatch{cols: make([]colData, len(e.cols))}); err != nil {
		return 0, fmt.Errorf("formats: parquet writer: %w", err)
	}
	size := int(empty.len())
	empty.release()
	return size, nil
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
		reader: newCellReader(e.typed, e.opts.OnTypeError),
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
