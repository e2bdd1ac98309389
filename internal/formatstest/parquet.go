// Package formatstest reads parquet output with an independent reader,
// Apache Arrow's, for tests of the packages that write it.
package formatstest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// ParquetFile is a parquet body as Apache Arrow's reader sees it.
type ParquetFile struct {
	Columns   []string // name and types, as describeColumn gives them
	Arrow     []string // the Arrow type of each column
	Rows      []map[string]any
	RowGroups int
	CreatedBy string
	KV        int      // key-value metadata entries
	Codecs    []string // of every column chunk
}

// ReadParquet reads body with Apache Arrow's parquet reader. Values are
// string, int64 (every integer type, timestamps in microseconds, dates in
// days), float64, bool or nil.
func ReadParquet(t testing.TB, body []byte) *ParquetFile {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("arrow: open parquet: %v", err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	pf := &ParquetFile{RowGroups: md.NumRowGroups(), CreatedBy: md.GetCreatedBy(), KV: len(md.KeyValueMetadata())}
	for i := range md.Schema.NumColumns() {
		pf.Columns = append(pf.Columns, describeColumn(md.Schema.Column(i)))
	}
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		for i := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				t.Fatalf("arrow: %v", err)
			}
			pf.Codecs = append(pf.Codecs, cc.Compression().String())
		}
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("arrow: %v", err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow: read table: %v", err)
	}
	defer tbl.Release()
	pf.Rows = make([]map[string]any, tbl.NumRows())
	for i := range pf.Rows {
		pf.Rows[i] = map[string]any{}
	}
	for ci := range int(tbl.NumCols()) {
		c := tbl.Column(ci)
		pf.Arrow = append(pf.Arrow, c.DataType().String())
		row := 0
		for _, chunk := range c.Data().Chunks() {
			for i := range chunk.Len() {
				pf.Rows[row][c.Name()] = arrowValue(t, chunk, i)
				row++
			}
		}
	}
	return pf
}

func arrowValue(t testing.TB, a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Date32:
		return int64(a.Value(i))
	}
	t.Fatalf("arrow: unexpected array type %T", a)
	return nil
}

// describeColumn describes a column: "name PHYSICAL Logical CONVERTED repetition".
func describeColumn(c *schema.Column) string {
	var logical string
	switch lt := c.LogicalType().(type) {
	case nil, schema.NoLogicalType, *schema.NoLogicalType:
		logical = "-"
	case schema.TimestampLogicalType:
		unit := map[schema.TimeUnitType]string{schema.TimeUnitMillis: "millis", schema.TimeUnitMicros: "micros", schema.TimeUnitNanos: "nanos"}[lt.TimeUnit()]
		logical = fmt.Sprintf("TIMESTAMP(%s,utc=%v)", unit, lt.IsAdjustedToUTC())
	default:
		logical = lt.String()
	}
	rep := "required"
	if c.SchemaNode().RepetitionType() == pq.Repetitions.Optional {
		rep = "optional"
	}
	return fmt.Sprintf("%s %s %s %s %s", c.Name(), c.PhysicalType(), logical, c.ConvertedType(), rep)
}
