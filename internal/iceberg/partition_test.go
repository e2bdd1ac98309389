package iceberg

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
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
		p, err := NewPartitioner(schema, spec, nil)
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
			if got := string(p.AppendDir(nil, stream, subject, seq, ts, nil)); got != want {
				t.Fatalf("%v: stream %q subject %q sequence %d time %s: %q, iceberg-go says %q", partitioning, stream, subject, seq, ts.UTC(), got, want)
			}
		}
	}
}

// A partition of a typed column the connector does not declare, or of a
// type its transform does not take, is refused.
func TestPartitionerRefusesColumnsItCanNotRead(t *testing.T) {
	schema, err := Schema(formats.Fields(formats.Options{Format: formats.Parquet, Columns: []formats.Column{{Name: "user_id", Source: "user.id", Type: formats.TypeInt64}}}))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Spec(schema, []config.Partition{{Column: "user_id", Transform: "bucket", N: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPartitioner(schema, spec, []string{"other"}); err == nil {
		t.Fatal("a partition of a column the connector does not declare was accepted")
	}
	if _, err := NewPartitioner(schema, spec, []string{"user_id"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Spec(schema, []config.Partition{{Column: "user_id", Transform: "day"}}); err == nil {
		t.Fatal("day of an int64 column made a spec")
	}
}

// The default partition folder costs no allocation per row.
func TestPartitionerDoesNotAllocate(t *testing.T) {
	schema, _ := Schema(formats.Fields(formats.Options{Format: formats.Parquet}))
	spec, _ := Spec(schema, config.DefaultPartitioning)
	p, err := NewPartitioner(schema, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 128)
	ts := time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)
	if n := testing.AllocsPerRun(100, func() { buf = p.AppendDir(buf[:0], "EVENTS", "events.orders", 42, ts, nil) }); n != 0 {
		t.Errorf("%.0f allocations per row", n)
	}
	if got := string(buf); got != "timestamp_hour=2026-12-01-07/subject=events.orders" {
		t.Errorf("folder %q", got)
	}
}

// partitionerOf returns the Partitioner of the envelope table partitioned
// by entries.
func partitionerOf(t testing.TB, entries ...string) (*Partitioner, *iceberg.Schema, iceberg.PartitionSpec) {
	t.Helper()
	schema, err := Schema(formats.Fields(formats.Options{Format: formats.Parquet}))
	if err != nil {
		t.Fatal(err)
	}
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
	p, err := NewPartitioner(schema, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, schema, spec
}

// folderValues returns the values of a folder's fields.
func folderValues(dir string) []string {
	var out []string
	for _, seg := range strings.Split(dir, "/") {
		_, v, _ := strings.Cut(seg, "=")
		out = append(out, v)
	}
	return out
}

// A subject of 1,000 bytes, mostly non-ASCII, escapes to about 2,800:
// its folder holds at most 128 bytes of it, the same for every message,
// and another long subject, even one that differs in its last byte only,
// gets another folder. A subject made to look like a cut one does not
// share the folder of the subject it imitates.
func TestPartitionerCutsLongValuesToDistinctFolders(t *testing.T) {
	long := func(last string) string {
		s := "events."
		for len(s) < 1000-len(last) {
			s += "é"
		}
		return s + last
	}
	ts := time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)
	p, _, _ := partitionerOf(t, "hour(timestamp)", "subject")
	cut := folderValues(string(p.AppendDir(nil, "EVENTS", long("a"), 1, ts, nil)))[1]
	imitation, err := url.QueryUnescape(cut)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, a, b string
	}{
		{"long subjects differing in the last byte", long("a"), long("b")},
		{"long subjects of different lengths", long(""), long("a")},
		{"a long subject and its first 128 bytes", long("a"), long("a")[:128]},
		{"a long subject and a subject escaping to its cut folder", long("a"), imitation},
		{"a subject with a tilde and one without", "events.a~b", "events.a%7Eb"},
		{"ASCII subjects at the bound", strings.Repeat("a", 128), strings.Repeat("a", 129)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			da := string(p.AppendDir(nil, "EVENTS", tc.a, 1, ts, nil))
			db := string(p.AppendDir(nil, "EVENTS", tc.b, 2, ts, nil))
			if da == db {
				t.Fatalf("subjects %s and %s share the folder %s", brief(tc.a), brief(tc.b), brief(da))
			}
			for _, d := range []string{da, db} {
				if v := folderValues(d)[1]; len(v) > pathtemplate.MaxValueLen {
					t.Errorf("folder %s: the subject's value is %d bytes, more than %d", brief(d), len(v), pathtemplate.MaxValueLen)
				}
				if len(d) > p.MaxDirLen() {
					t.Errorf("folder %s is %d bytes, more than MaxDirLen %d", brief(d), len(d), p.MaxDirLen())
				}
			}
			if again := string(p.AppendDir(nil, "EVENTS", tc.a, 3, ts.Add(time.Minute), nil)); again != da {
				t.Errorf("the folder of %s changed: %s, then %s", brief(tc.a), brief(da), brief(again))
			}
		})
	}
	// Truncated to more than the bound, a subject is cut as well, and the
	// object key of a data file of the table fits in S3's limit.
	p, _, _ = partitionerOf(t, "truncate(subject, 900)", "subject", "stream")
	dir := p.AppendDir(nil, long("a"), long("a"), 1, ts, nil)
	for _, v := range folderValues(string(dir)) {
		if len(v) > pathtemplate.MaxValueLen {
			t.Errorf("folder %s: a value of %d bytes", brief(string(dir)), len(v))
		}
	}
	if _, err := pathtemplate.Key("raw/lake/events/data", string(dir), 1, 1, "parquet"); err != nil {
		t.Errorf("data file key under %s: %v", brief(string(dir)), err)
	}
}

// brief quotes s, cut to 100 bytes with its length when longer.
func brief(s string) string {
	if len(s) <= 100 {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:100], len(s))
}

// Any two distinct subjects get distinct folders, each value within the
// bound, named as iceberg-go names it when that name is within the bound
// and does not end like a cut one.
func FuzzPartitionerFolders(f *testing.F) {
	f.Add("events.a", "events.b")
	f.Add(strings.Repeat("é", 300), strings.Repeat("é", 301))
	f.Add("a~0123456789ABCDEF", "a%7E0123456789ABCDEF")
	f.Add("a b", "a+b")
	p, schema, spec := partitionerOf(f, "subject")
	ts := time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, a, b string) {
		da := string(p.AppendDir(nil, "S", a, 1, ts, nil))
		db := string(p.AppendDir(nil, "S", b, 1, ts, nil))
		if a != b && da == db {
			t.Fatalf("subjects %s and %s share the folder %s", brief(a), brief(b), brief(da))
		}
		if len(da) > p.MaxDirLen() {
			t.Fatalf("folder %s is over %d bytes", brief(da), p.MaxDirLen())
		}
		want := spec.PartitionToPath(row{a}, schema)
		if v := strings.TrimPrefix(want, "subject="); len(v) <= pathtemplate.MaxValueLen && !looksCut([]byte(v)) && da != want {
			t.Fatalf("subject %s: folder %s, iceberg-go says %s", brief(a), brief(da), brief(want))
		}
	})
}
