package iceberg

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// typedColumns has a typed column of every type.
var typedColumns = []formats.Column{
	{Name: "s", Source: "s", Type: formats.TypeString},
	{Name: "j", Source: "j", Type: formats.TypeJSON},
	{Name: "i64", Source: "i64", Type: formats.TypeInt64},
	{Name: "i32", Source: "i32", Type: formats.TypeInt32},
	{Name: "d", Source: "d", Type: formats.TypeDouble},
	{Name: "b", Source: "b", Type: formats.TypeBoolean},
	{Name: "ts", Source: "ts", Type: formats.TypeTimestamp},
	{Name: "dt", Source: "dt", Type: formats.TypeDate},
}

func typedColumnNames() []string {
	names := make([]string, len(typedColumns))
	for i, c := range typedColumns {
		names[i] = c.Name
	}
	return names
}

// transformOf returns the iceberg-go transform of a partitioning entry's
// transform.
func transformOf(name string, n int) iceberg.Transform {
	switch name {
	case "year":
		return iceberg.YearTransform{}
	case "month":
		return iceberg.MonthTransform{}
	case "day":
		return iceberg.DayTransform{}
	case "hour":
		return iceberg.HourTransform{}
	case "bucket":
		return iceberg.BucketTransform{NumBuckets: n}
	case "truncate":
		return iceberg.TruncateTransform{Width: n}
	}
	return iceberg.IdentityTransform{}
}

var transforms = []string{"identity", "year", "month", "day", "hour", "bucket", "truncate"}

// The config's check of which transform takes which column type is what
// iceberg-go allows, for the Iceberg type each column type is stored as.
func TestConfigTakesTheTransformsIcebergAllows(t *testing.T) {
	for _, c := range typedColumns {
		typ, err := fieldType(c.Type)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range transforms {
			if got, want := config.TransformTakes(tr, c.Type), transformOf(tr, 4).CanTransform(typ); got != want {
				t.Errorf("%s of a %s column: config says %v, iceberg-go %v", tr, c.Type, got, want)
			}
		}
	}
}

// randomValue returns a random value of type typ (null now and then) and
// its iceberg-go literal (nil for null).
func randomValue(rng *rand.Rand, typ formats.ColumnType) (formats.Value, iceberg.Literal) {
	v := formats.Value{Type: typ}
	if rng.IntN(10) == 0 {
		v.Null = true
		return v, nil
	}
	switch typ {
	case formats.TypeString, formats.TypeJSON:
		strs := []string{"t1", "tenant-42", "null", "nullify", "", "a b", "a+b/c", "é+&=%", "日本語テキスト", "~x", "\xff\xfeab",
			strings.Repeat("é", 100), "a~0123456789ABCDEF", `{"a":1}`, "x.y.z"}
		s := strs[rng.IntN(len(strs))]
		if rng.IntN(3) == 0 {
			s = string(rune('a'+rng.IntN(26))) + strings.Repeat("z", rng.IntN(20))
		}
		v.Bytes = []byte(s)
		return v, iceberg.StringLiteral(s)
	case formats.TypeInt64:
		v.Int = rng.Int64() >> rng.IntN(64)
		if rng.IntN(2) == 0 {
			v.Int = -v.Int
		}
		return v, iceberg.Int64Literal(v.Int)
	case formats.TypeInt32:
		x := int32(rng.Uint32() >> rng.IntN(32))
		v.Int = int64(x)
		return v, iceberg.Int32Literal(x)
	case formats.TypeDouble:
		fs := []float64{0, -0.0, 1.5, -2.25, 1e21, 1e-7, 123456789.125, math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, math.SmallestNonzeroFloat64}
		v.Float = fs[rng.IntN(len(fs))]
		if rng.IntN(2) == 0 {
			v.Float = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(30)-15))
		}
		return v, iceberg.Float64Literal(v.Float)
	case formats.TypeBoolean:
		if rng.IntN(2) == 0 {
			v.Int = 1
		}
		return v, iceberg.BoolLiteral(v.Int != 0)
	case formats.TypeTimestamp:
		v.Int = rng.Int64N(4_000_000_000_000_000) - 1_000_000_000_000_000
		return v, iceberg.TimestampLiteral(v.Int)
	case formats.TypeDate:
		v.Int = rng.Int64N(40_000) - 10_000
		return v, iceberg.DateLiteral(v.Int)
	}
	panic("type " + typ)
}

// The folders a Partitioner renders for typed columns are the ones
// iceberg-go's PartitionToPath names for the same rows, for every
// transform on every type it takes, nulls included (Iceberg's null
// partition). Two exceptions, as for the envelope: a value named in more
// than the bound is cut, and a string whose partition value is "null" is
// named "%6Eull", apart from the null partition.
func TestPartitionerAgreesWithIcebergGoOnTypedColumns(t *testing.T) {
	schema, err := Schema(formats.Fields(formats.Options{Format: formats.Parquet, Columns: typedColumns}))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var cases [][]config.Partition
	for _, c := range typedColumns {
		for _, tr := range transforms {
			if !config.TransformTakes(tr, c.Type) {
				continue
			}
			for _, n := range []int{1, 3, 8, 1000} {
				if n > 1 && tr != "bucket" && tr != "truncate" {
					break
				}
				p := config.Partition{Column: c.Name, Transform: tr, N: n}
				if tr != "bucket" && tr != "truncate" {
					p.N = 0
				}
				cases = append(cases, []config.Partition{p})
			}
		}
	}
	cases = append(cases,
		[]config.Partition{{Column: "ts", Transform: "day"}, {Column: "s", Transform: "bucket", N: 8}},
		[]config.Partition{{Column: "timestamp", Transform: "hour"}, {Column: "dt", Transform: "identity"}, {Column: "subject", Transform: "identity"}, {Column: "i32", Transform: "truncate", N: 10}},
	)
	checked := map[string]bool{}
	for _, partitioning := range cases {
		spec, err := Spec(schema, partitioning)
		if err != nil {
			t.Fatalf("%v: %v", partitioning, err)
		}
		p, err := NewPartitioner(schema, spec, typedColumnNames())
		if err != nil {
			t.Fatalf("%v: %v", partitioning, err)
		}
		for range 300 {
			vals := make([]formats.Value, len(typedColumns))
			lits := make([]iceberg.Literal, len(typedColumns))
			for i, c := range typedColumns {
				vals[i], lits[i] = randomValue(rng, c.Type)
			}
			ts := time.Unix(rng.Int64N(4_000_000_000)-1_000_000_000, rng.Int64N(1e9))
			var data row
			var cut []bool // the field's value is named otherwise than iceberg-go names it
			for _, f := range spec.Fields() {
				src, _ := schema.FindFieldByID(f.SourceIDs[0])
				var lit iceberg.Literal
				switch src.Name {
				case "subject":
					lit = iceberg.StringLiteral("events.a")
				case "timestamp":
					lit = iceberg.TimestampLiteral(ts.UnixMicro())
				default:
					for i, c := range typedColumns {
						if c.Name == src.Name {
							lit = lits[i]
						}
					}
				}
				var v any
				if lit != nil {
					if out := f.Transform.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: lit}); out.Valid {
						v = out.Val.Any()
					}
				}
				data = append(data, v)
				s, isString := v.(string)
				cut = append(cut, isString && s == "null")
			}
			want := strings.Split(spec.PartitionToPath(data, schema), "/")
			dir := string(p.AppendDir(nil, "S", "events.a", 1, ts, vals))
			got := strings.Split(dir, "/")
			if len(got) != len(want) {
				t.Fatalf("%v: folder %q, iceberg-go says %q", partitioning, dir, strings.Join(want, "/"))
			}
			for i := range want {
				name, wv, _ := strings.Cut(want[i], "=")
				_, gv, _ := strings.Cut(got[i], "=")
				switch {
				case cut[i]:
					if gv != "%6Eull" {
						t.Fatalf("%v: the string \"null\" is named %q, want %%6Eull", partitioning, got[i])
					}
				case len(wv) > pathtemplate.MaxValueLen || looksCut([]byte(wv)):
					if len(gv) > pathtemplate.MaxValueLen {
						t.Fatalf("%v: %s holds %d bytes", partitioning, brief(got[i]), len(gv))
					}
				case got[i] != want[i]:
					t.Fatalf("%v: values %v: field %s is %q, iceberg-go says %q", partitioning, vals, name, got[i], want[i])
				default:
					checked[name] = true
				}
				if wv == "null" && data[i] == nil {
					checked[name+" null"] = true
				}
			}
			if len(dir) > p.MaxDirLen() {
				t.Fatalf("%v: folder %s is over MaxDirLen %d", partitioning, brief(dir), p.MaxDirLen())
			}
		}
	}
	// Every field was seen agreeing with a value and with null.
	for _, partitioning := range cases[:len(cases)-2] {
		spec, _ := Spec(schema, partitioning)
		for _, f := range spec.Fields() {
			if !checked[f.Name] || !checked[f.Name+" null"] {
				t.Errorf("partition field %s: agreed with a value %v, with null %v", f.Name, checked[f.Name], checked[f.Name+" null"])
			}
		}
	}
}

// A typed column's partition folder costs no allocation per row, for
// every transform.
func TestTypedPartitionerDoesNotAllocate(t *testing.T) {
	schema, err := Schema(formats.Fields(formats.Options{Format: formats.Parquet, Columns: typedColumns}))
	if err != nil {
		t.Fatal(err)
	}
	var partitioning []config.Partition
	for _, e := range []string{"hour(ts)", "month(dt)", "bucket(s, 8)", "bucket(i64, 8)", "truncate(s, 3)", "truncate(i32, 10)",
		"s", "j", "i64", "d", "b", "ts", "dt"} {
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
	p, err := NewPartitioner(schema, spec, typedColumnNames())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	vals := make([]formats.Value, len(typedColumns))
	for i, c := range typedColumns {
		for vals[i].Null || vals[i].Type == "" {
			vals[i], _ = randomValue(rng, c.Type)
		}
	}
	vals[0].Bytes = []byte("tenant é/1")
	buf := make([]byte, 0, p.MaxDirLen())
	ts := time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)
	if n := testing.AllocsPerRun(100, func() { buf = p.AppendDir(buf[:0], "S", "events.a", 1, ts, vals) }); n != 0 {
		t.Errorf("%.0f allocations per row: %s", n, buf)
	}
	vals[0].Null = true
	if n := testing.AllocsPerRun(100, func() { buf = p.AppendDir(buf[:0], "S", "events.a", 1, ts, vals) }); n != 0 {
		t.Errorf("%.0f allocations per row with a null: %s", n, buf)
	}
}

// A data file committed to a table partitioned by a bucket gets its
// bucket from its partition folder (iceberg-go does not infer a bucket
// from the file's bounds), and the day and identity from its bounds; a
// null bucket is null, a field present with a nil value. A folder that is
// not the spec's is an error.
func TestADataFileTakesItsBucketFromItsFolder(t *testing.T) {
	opts := formats.Options{Format: formats.Parquet, Compression: formats.Snappy, Columns: []formats.Column{
		{Name: "tenant", Source: "tenant", Type: formats.TypeString},
		{Name: "created_at", Source: "created_at", Type: formats.TypeTimestamp},
	}}
	opts.FieldIDs = formats.PositionalFieldIDs(formats.Fields(opts))
	schema, err := Schema(formats.Fields(opts))
	if err != nil {
		t.Fatal(err)
	}
	var partitioning []config.Partition
	for _, e := range []string{"day(created_at)", "bucket(tenant, 8)", "tenant"} {
		p, _ := config.ParsePartition(e)
		partitioning = append(partitioning, p)
	}
	spec, err := Spec(schema, partitioning)
	if err != nil {
		t.Fatal(err)
	}
	// Field ids as a table assigns them.
	var fields []iceberg.PartitionField
	for i, f := range spec.Fields() {
		f.FieldID = 1000 + i
		fields = append(fields, f)
	}
	spec = iceberg.NewPartitionSpecID(0, fields...)
	part, err := NewPartitioner(schema, spec, []string{"tenant", "created_at"})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := formats.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := formats.NewExtractor(opts.Columns, formats.RejectTypeErrors)
	if err != nil {
		t.Fatal(err)
	}
	const table = "s3://lake/raw/lake/events"
	for _, tc := range []struct {
		payload string
		day     any
		tenant  any
	}{
		{`{"tenant":"t3","created_at":"2026-11-02T10:00:00Z"}`, iceberg.Date(20759), "t3"},
		{`{"tenant":"t3"}`, nil, "t3"},
		{`{"created_at":"2026-11-02T10:00:00Z"}`, iceberg.Date(20759), nil},
	} {
		b := enc.NewBatch()
		var dir []byte
		for q := uint64(1); q <= 3; q++ {
			rec := &formats.Record{Stream: "S", Subject: "s.a", Sequence: q, Time: time.Now(), Data: []byte(tc.payload)}
			if err := b.Append(rec); err != nil {
				t.Fatal(err)
			}
			vals, err := ext.Extract(rec.Data)
			if err != nil {
				t.Fatal(err)
			}
			dir = part.AppendDir(dir[:0], "S", "s.a", q, rec.Time, vals)
		}
		body, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		loc := table + "/data/" + string(dir) + "/1-3.parquet"
		df, err := dataFile(context.Background(), memIO{loc: body.Bytes()}, loc, schema, spec, iceberg.Properties{}, table)
		if err != nil {
			t.Fatalf("%s: %v", tc.payload, err)
		}
		got := df.Partition()
		want := map[int]any{}
		if tc.day != nil {
			want[fields[0].FieldID] = tc.day
		}
		if tc.tenant != nil {
			want[fields[1].FieldID] = iceberg.BucketTransform{NumBuckets: 8}.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: iceberg.StringLiteral(tc.tenant.(string))}).Val.Any()
			want[fields[2].FieldID] = tc.tenant
		}
		for id, v := range want {
			if got[id] != v {
				t.Errorf("%s in %s: partition %v, want %v", tc.payload, dir, got, want)
			}
		}
		for id, v := range got {
			if _, ok := want[id]; !ok && v != nil {
				t.Errorf("%s in %s: partition %v, want %v", tc.payload, dir, got, want)
			}
		}
		// A null is a field with a nil value, not a missing field:
		// iceberg-go's AddDataFiles refuses a data file whose partition
		// lacks a field of the spec, so a commit would fail for ever.
		for _, f := range fields {
			if _, ok := got[f.FieldID]; !ok {
				t.Errorf("%s in %s: partition %v lacks field %d (%s)", tc.payload, dir, got, f.FieldID, f.Name)
			}
		}
		if df.Count() != 3 || len(df.LowerBoundValues()) == 0 {
			t.Errorf("%s: %d rows, bounds %v", tc.payload, df.Count(), df.LowerBoundValues())
		}
	}
	for _, loc := range []string{table + "/data/created_at_day=2026-11-02/tenant_bucket=9/tenant=t3/f.parquet",
		table + "/data/created_at_day=2026-11-02/tenant=t3/f.parquet", "s3://elsewhere/data/f.parquet"} {
		if _, err := dataFile(context.Background(), memIO{}, loc, schema, spec, iceberg.Properties{}, table); err == nil {
			t.Errorf("%s: a data file in no partition folder of the spec was read", loc)
		}
	}
}
