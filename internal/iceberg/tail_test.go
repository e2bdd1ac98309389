package iceberg

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"reflect"
	"testing"
	"time"

	iceberggo "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
)

// memIO serves whole files from memory.
type memIO map[string][]byte

func (m memIO) Open(name string) (iceio.File, error) {
	b, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	// A tail of the whole file serves it whole.
	return &tailFile{name: name, tail: &Tail{Size: int64(len(b)), Bytes: b}}, nil
}

func (m memIO) Remove(string) error { return errors.ErrUnsupported }

// The statistics a commit takes from a file's tail (its footer) are the
// ones it would read from the whole file in the store, and a tail too
// short for the footer fails, so that the commit reads the store instead.
func TestATailGivesTheStatisticsOfTheWholeFile(t *testing.T) {
	opts := formats.Options{Format: formats.Parquet, Compression: formats.Snappy, Columns: []formats.Column{
		{Name: "order_id", Source: "id", Type: formats.TypeInt64},
		{Name: "customer", Source: "customer", Type: formats.TypeString},
	}}
	opts.FieldIDs = formats.PositionalFieldIDs(formats.Fields(opts))
	schema, err := Schema(formats.Fields(opts))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Spec(schema, config.DefaultPartitioning)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := formats.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	b := enc.NewBatch()
	hour := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	for q := uint64(1); q <= 500; q++ {
		rec := &formats.Record{Stream: "S", Subject: "s.a", Sequence: q, Time: hour.Add(time.Duration(q) * time.Second),
			Data: []byte(`{"id": ` + string(rune('0'+q%10)) + `, "customer": "c-` + string(rune('a'+q%26)) + `"}`)}
		if err := b.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	body, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	const loc = "s3://lake/raw/t/data/f.parquet"
	whole := body.Bytes()
	ctx := context.Background()
	props := iceberggo.Properties{}
	want, err := table.FileToDataFile(ctx, memIO{loc: whole}, loc, schema, spec, 0, props)
	if err != nil {
		t.Fatal(err)
	}
	tail := parquetTailOf(t, whole)
	if len(tail.Bytes) >= len(whole)/2 {
		t.Fatalf("the tail is %d of the file's %d bytes: not a footer", len(tail.Bytes), len(whole))
	}
	got, err := table.FileToDataFile(ctx, tailIO{loc, tail}, loc, schema, spec, 0, props)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"records", got.Count(), want.Count()},
		{"size", got.FileSizeBytes(), want.FileSizeBytes()},
		{"column sizes", got.ColumnSizes(), want.ColumnSizes()},
		{"value counts", got.ValueCounts(), want.ValueCounts()},
		{"null counts", got.NullValueCounts(), want.NullValueCounts()},
		{"lower bounds", got.LowerBoundValues(), want.LowerBoundValues()},
		{"upper bounds", got.UpperBoundValues(), want.UpperBoundValues()},
		{"partition", got.Partition(), want.Partition()},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s from the tail: %v, from the whole file: %v", c.name, c.got, c.want)
		}
	}
	if got.Count() != 500 {
		t.Errorf("%d records, want 500", got.Count())
	}

	short := &Tail{Size: tail.Size, Bytes: tail.Bytes[len(tail.Bytes)/2:]}
	if _, err := table.FileToDataFile(ctx, tailIO{loc, short}, loc, schema, spec, 0, props); err == nil {
		t.Fatal("a tail without the whole footer gave statistics")
	}
}

// parquetTailOf cuts the footer and its trailer off a parquet file.
func parquetTailOf(t *testing.T, b []byte) *Tail {
	t.Helper()
	if len(b) < 12 || string(b[len(b)-4:]) != "PAR1" {
		t.Fatal("not a parquet file")
	}
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:])) + 8
	return &Tail{Size: int64(len(b)), Bytes: b[len(b)-n:]}
}

var _ io.ReaderAt = (*tailFile)(nil)
