package iceberg

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/jetlake/jetlake/formats"
)

// Schema returns the Iceberg schema of the records an encoder writes, given
// its Fields: a field per column, in order, field ids from 1 (as
// formats.Options.FieldIDs writes them into the data files).
func Schema(fields []formats.Field) (*iceberg.Schema, error) {
	nested := make([]iceberg.NestedField, len(fields))
	for i, f := range fields {
		t, err := fieldType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		nested[i] = iceberg.NestedField{ID: i + 1, Name: f.Name, Type: t, Required: !f.Optional}
	}
	return iceberg.NewSchema(0, nested...), nil
}

// fieldType maps a formats column type to an Iceberg type.
func fieldType(t formats.ColumnType) (iceberg.Type, error) {
	switch t {
	case formats.TypeString, formats.TypeJSON:
		return iceberg.PrimitiveTypes.String, nil
	case formats.TypeInt64:
		return iceberg.PrimitiveTypes.Int64, nil
	case formats.TypeInt32:
		return iceberg.PrimitiveTypes.Int32, nil
	case formats.TypeDouble:
		return iceberg.PrimitiveTypes.Float64, nil
	case formats.TypeBoolean:
		return iceberg.PrimitiveTypes.Bool, nil
	case formats.TypeTimestamp:
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case formats.TypeDate:
		return iceberg.PrimitiveTypes.Date, nil
	}
	return nil, fmt.Errorf("type %q has no Iceberg type", t)
}

// DefaultPartitioning is the partitioning of a table when the connector
// names none: by hour of the message time, then by subject.
var DefaultPartitioning = []string{"hour(timestamp)", "subject"}

// Spec returns the partition spec of partitioning, in Trino's syntax: a
// column name (identity), year(col), month(col), day(col), hour(col),
// bucket(col, n) or truncate(col, w).
func Spec(schema *iceberg.Schema, partitioning []string) (iceberg.PartitionSpec, error) {
	var opts []iceberg.PartitionOption
	for _, p := range partitioning {
		col, tr, name, err := parsePartition(p)
		if err != nil {
			return iceberg.PartitionSpec{}, err
		}
		if _, ok := schema.FindFieldByName(col); !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("partitioning %q: the table has no column %q", p, col)
		}
		opts = append(opts, iceberg.AddPartitionFieldByName(col, name, tr, schema, nil))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partitioning %q: %w", partitioning, err)
	}
	return spec, nil
}

// parsePartition parses one partitioning entry into its source column, its
// transform and the partition field's name (Trino's: col, col_hour,
// col_bucket, ...).
func parsePartition(p string) (col string, tr iceberg.Transform, name string, err error) {
	s := strings.TrimSpace(p)
	fn, args, ok := strings.Cut(s, "(")
	if !ok {
		if s == "" || strings.ContainsAny(s, " ,)") {
			return "", nil, "", fmt.Errorf("partitioning %q: want a column, or a transform such as hour(timestamp)", p)
		}
		return s, iceberg.IdentityTransform{}, s, nil
	}
	args, ok = strings.CutSuffix(args, ")")
	if !ok {
		return "", nil, "", fmt.Errorf("partitioning %q: missing )", p)
	}
	parts := strings.Split(args, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	fn = strings.ToLower(strings.TrimSpace(fn))
	col = parts[0]
	switch fn {
	case "year", "month", "day", "hour":
		if len(parts) != 1 || col == "" {
			return "", nil, "", fmt.Errorf("partitioning %q: %s takes one column", p, fn)
		}
		tr = map[string]iceberg.Transform{"year": iceberg.YearTransform{}, "month": iceberg.MonthTransform{},
			"day": iceberg.DayTransform{}, "hour": iceberg.HourTransform{}}[fn]
	case "bucket", "truncate":
		if len(parts) != 2 || col == "" {
			return "", nil, "", fmt.Errorf("partitioning %q: %s takes a column and a number", p, fn)
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil || n <= 0 {
			return "", nil, "", fmt.Errorf("partitioning %q: %q is not a positive number", p, parts[1])
		}
		if fn == "bucket" {
			tr = iceberg.BucketTransform{NumBuckets: n}
		} else {
			tr = iceberg.TruncateTransform{Width: n}
		}
	default:
		return "", nil, "", fmt.Errorf("partitioning %q: unknown transform %q (want year, month, day, hour, bucket or truncate)", p, fn)
	}
	return col, tr, col + "_" + fn, nil
}
