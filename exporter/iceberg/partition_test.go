package iceberg

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
)

// row is a partition record for PartitionSpec.PartitionToPath.
type row []any

func (r row) Size() int        { return len(r) }
func (r row) Get(i int) any    { return r[i] }
func (r row) Set(i int, v any) { r[i] = v }

// The folders a Partitioner renders are the ones iceberg-go names for the
// same rows, for every transform and envelope column.
func TestPartitionerAgreesWithIcebergGo(t *testing.T) {
	schema, err := Schema(formats.Fields(formats.Options{Format: formats.Parquet}))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	subjects := []string{"events.a", "events.b c", "a/b", "é+&=%", "", "x.y.z"}
	for _, entries := range [][]string{
		{"hour(timestamp)", "subject"},
		{"day(timestamp)", "stream"},
		{"month(timestamp)"},
		{"year(timestamp)", "subject"},
		{"bucket(subject, 16)", "hour(timestamp)"},
		{"truncate(subject, 3)"},
		{"sequence"},
		{"timestamp"},
		{"bucket(sequence, 7)", "truncate(stream, 2)"},
		{},
	} {
		var partitioning []config.Partition
		for _, e := range entries {
			p, err := config.ParsePartition(e)
			if err != nil {
				t.Fatal(err)
			}
			partitioning = append(partitioning, p)
		}
		spec, err := Spec(schema, partitioning)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPartitioner(schema, spec)
		if err != nil {
			t.Fatal(err)
		}
		for range 200 {
			stream := []string{"EVENTS", "S p"}[rng.IntN(2)]
			subject := subjects[rng.IntN(len(subjects))]
			seq := rng.Uint64N(1 << 40)
			ts := time.Unix(rng.Int64N(4_000_000_000)-1_000_000_000, rng.Int64N(1e9))
			var data row
			for _, f := range spec.Fields() {
				src, _ := schema.FindFieldByID(f.SourceIDs[0])
				var lit iceberg.Literal
				switch src.Name {
				case "stream":
					lit = iceberg.StringLiteral(stream)
				case "subject":
					lit = iceberg.StringLiteral(subject)
				case "sequence":
					lit = iceberg.Int64Literal(int64(seq))
				case "timestamp":
					lit = iceberg.TimestampLiteral(ts.UnixMicro())
				}
				out := f.Transform.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: lit})
				data = append(data, out.Val.Any())
			}
			want := spec.PartitionToPath(data, schema)
			if got := string(p.AppendDir(nil, stream, subject, seq, ts)); got != want {
				t.Fatalf("%v: stream %q subject %q sequence %d time %s: %q, iceberg-go says %q", partitioning, stream, subject, seq, ts.UTC(), got, want)
			}
		}
	}
}

func TestPartitionerRefusesColumnsFromThePayload(t *testing.T) {
	schema, err := Schema(formats.Fields(formats.Options{Format: formats.Parquet, Columns: []formats.Column{{Name: "user_id", Source: "user.id", Type: formats.TypeInt64}}}))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Spec(schema, []config.Partition{{Column: "user_id", Transform: "bucket", N: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPartitioner(schema, spec); err == nil {
		t.Fatal("a partition of a typed column was accepted")
	}
}

// The default partition folder costs no allocation per row.
func TestPartitionerDoesNotAllocate(t *testing.T) {
	schema, _ := Schema(formats.Fields(formats.Options{Format: formats.Parquet}))
	spec, _ := Spec(schema, config.DefaultPartitioning)
	p, err := NewPartitioner(schema, spec)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 128)
	ts := time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)
	if n := testing.AllocsPerRun(100, func() { buf = p.AppendDir(buf[:0], "EVENTS", "events.orders", 42, ts) }); n != 0 {
		t.Errorf("%.0f allocations per row", n)
	}
	if got := string(buf); got != "timestamp_hour=2026-12-01-07/subject=events.orders" {
		t.Errorf("folder %q", got)
	}
}
