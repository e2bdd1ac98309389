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

// pcol is one column of the schema.
type pcol struct {
	name     string
	kind     colKind
	node     parquet.Node
	optional bool
	dict     bool // dictionary-encoded
	blob     bool // no min and max: they mean nothing and may be large
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
			c.node = parquet.Optional(c.node)
		} else {
			c.node = parquet.Required(c.node)
		}
		if opts.FieldIDs != nil {
			id, ok := opts.FieldIDs[c.name]
			if !ok {
				return nil, fmt.Errorf("formats: column %s has no field id", c.name)
			}
			c.node = parquet.FieldID(c.node, id)
		}
		group[c.name] = c.node
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
