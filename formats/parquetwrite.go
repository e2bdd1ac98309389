package formats

import (
	"math"

	"github.com/parquet-go/parquet-go"
)

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
