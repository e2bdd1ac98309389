package iceberg

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// dataFile returns the manifest entry's DataFile of the data file at loc,
// under the data folder of a table of schema, spec and props: its
// statistics from its footer (as table.FileToDataFile reads them), and its
// partition. iceberg-go infers a partition value from the bounds of the
// source column, which holds for the transforms that preserve order
// (identity, truncate, year, month, day, hour) but not for bucket, whose
// value it refuses to infer: a bucket's value is read from the file's
// partition folder instead, which jetlake named (Partitioner), and where
// a bucket is a number, never cut.
func dataFile(ctx context.Context, fio iceio.IO, loc string, schema *iceberg.Schema, spec iceberg.PartitionSpec, props iceberg.Properties, tableLoc string) (iceberg.DataFile, error) {
	var ordered []iceberg.PartitionField
	hashed := false
	for _, f := range spec.Fields() {
		if f.Transform.PreservesOrder() {
			ordered = append(ordered, f)
		} else {
			hashed = true
		}
	}
	if !hashed {
		return table.FileToDataFile(ctx, fio, loc, schema, spec, 0, props)
	}
	folder, err := partitionFolder(loc, tableLoc, spec)
	if err != nil {
		return nil, err
	}
	df, err := table.FileToDataFile(ctx, fio, loc, schema, iceberg.NewPartitionSpecID(spec.ID(), ordered...), 0, props)
	if err != nil {
		return nil, err
	}
	values := df.Partition()
	if values == nil {
		values = map[int]any{}
	}
	logical := map[int]string{}
	for i, f := range spec.Fields() {
		if src, ok := schema.FindFieldByID(f.SourceID()); ok {
			switch f.Transform.ResultType(src.Type).(type) {
			case iceberg.DateType:
				logical[f.FieldID] = "date"
			case iceberg.TimestampType, iceberg.TimestampTzType:
				logical[f.FieldID] = "timestamp-micros"
			}
		}
		bucket, ok := f.Transform.(iceberg.BucketTransform)
		if !ok {
			continue
		}
		switch v := folder[i]; v {
		case "null":
			// Present with nil, not absent: AddDataFiles refuses a data
			// file whose partition lacks a field of the spec.
			values[f.FieldID] = nil
		default:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 || n >= int64(bucket.NumBuckets) {
				return nil, fmt.Errorf("data file %s: partition folder %s=%s is not a bucket of %d", loc, f.Name, v, bucket.NumBuckets)
			}
			values[f.FieldID] = int32(n)
		}
	}
	b, err := iceberg.NewDataFileBuilder(spec, df.ContentType(), df.FilePath(), df.FileFormat(), values, logical, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(df.NaNValueCounts()).LowerBoundValues(df.LowerBoundValues()).UpperBoundValues(df.UpperBoundValues()).
		SplitOffsets(df.SplitOffsets())
	if ids := df.EqualityFieldIDs(); len(ids) > 0 {
		b.EqualityFieldIDs(ids)
	}
	if id := df.SortOrderID(); id != nil {
		b.SortOrderID(*id)
	}
	return b.Build(), nil
}

// partitionFolder returns the values of the partition folder of the data
// file at loc, one per field of spec, as they are written (escaped): the
// folder is "<table>/data/<field>=<value>/.../<file>".
func partitionFolder(loc, tableLoc string, spec iceberg.PartitionSpec) ([]string, error) {
	rel, ok := strings.CutPrefix(loc, strings.TrimSuffix(tableLoc, "/")+"/data/")
	if !ok {
		return nil, &LocationError{Location: loc, DataDir: strings.TrimSuffix(tableLoc, "/") + "/data/"}
	}
	segs := strings.Split(path.Dir(rel), "/")
	if len(segs) != spec.NumFields() {
		return nil, fmt.Errorf("data file %s: its folder %s is not a partition of %d fields", loc, path.Dir(rel), spec.NumFields())
	}
	vals := make([]string, len(segs))
	for i, f := range spec.Fields() {
		v, ok := strings.CutPrefix(segs[i], url.QueryEscape(f.Name)+"=")
		if !ok {
			return nil, fmt.Errorf("data file %s: folder %s is not of partition field %s", loc, segs[i], f.Name)
		}
		vals[i] = v
	}
	return vals, nil
}
