package iceberg

import (
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/jetlake/jetlake/config"
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

// Spec returns the partition spec of partitioning over schema; fields are
// named as Trino names them: subject, timestamp_hour, subject_bucket. A
// partition column must be in the schema, of a type its transform takes.
func Spec(schema *iceberg.Schema, partitioning []config.Partition) (iceberg.PartitionSpec, error) {
	var opts []iceberg.PartitionOption
	for _, p := range partitioning {
		col, ok := schema.FindFieldByName(p.Column)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("partitioning %s: the table has no column %q", p, p.Column)
		}
		var tr iceberg.Transform
		name := p.Column + "_" + p.Transform
		switch p.Transform {
		case "identity":
			tr, name = iceberg.IdentityTransform{}, p.Column
		case "year":
			tr = iceberg.YearTransform{}
		case "month":
			tr = iceberg.MonthTransform{}
		case "day":
			tr = iceberg.DayTransform{}
		case "hour":
			tr = iceberg.HourTransform{}
		case "bucket":
			tr = iceberg.BucketTransform{NumBuckets: p.N}
		case "truncate":
			tr = iceberg.TruncateTransform{Width: p.N}
		default:
			return iceberg.PartitionSpec{}, fmt.Errorf("partitioning %s: unknown transform %q", p, p.Transform)
		}
		if !tr.CanTransform(col.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("partitioning %s: %s does not take column %s of type %s", p, p.Transform, p.Column, col.Type)
		}
		opts = append(opts, iceberg.AddPartitionFieldByName(p.Column, name, tr, schema, nil))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partitioning %v: %w", partitioning, err)
	}
	return spec, nil
}
