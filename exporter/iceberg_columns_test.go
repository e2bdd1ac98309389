package exporter_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/parquet-go/parquet-go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
	"github.com/jetlake/jetlake/internal/objstore"
)

// A table partitioned by day(created_at) and bucket(tenant, 8), two typed
// columns read from the payload, over a backfill of 3 days with a few
// messages without created_at: every sequence is in the table once; each
// data file holds one partition, lies in its folder, and its manifest
// entry's partition is the day and the bucket of its rows (null for the
// rows without created_at). Compaction of the closed partitions keeps it
// so, and iceberg-go's scan reads every row back.
func TestATableIsPartitionedByTypedColumns(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 1000
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	body, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(body), "\n[iceberg]\n", `
[[output.columns]]
name = "tenant"
source = "tenant"
type = "string"

[[output.columns]]
name = "created_at"
source = "created_at"
type = "timestamp"

[iceberg]
`, 1)
	s += "partitioning = [\"day(created_at)\", \"bucket(tenant, 8)\"]\n"
	if err := os.WriteFile(e.file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.connector()

	const perDay, noTime = 200, 12
	days := []string{"2026-11-01", "2026-11-02", "2026-11-03"}
	n := perDay*len(days) + noTime
	msg := func(i int) (string, []byte) {
		subj := fmt.Sprintf("%s.s%d", e.stream, i%2)
		if i >= perDay*len(days) {
			return subj, fmt.Appendf(nil, `{"i":%d,"tenant":"t%d"}`, i, i%5)
		}
		return subj, fmt.Appendf(nil, `{"i":%d,"tenant":"t%d","created_at":"%sT%02d:%02d:00Z"}`, i, i%5, days[i%3], i%24, i%60)
	}
	last := e.publishEach(n, msg)
	e.runUntilIdle(c, 2*time.Minute)

	files, parts := e.checkTypedPartitions(c, catalog, last, n, noTime)
	t.Logf("%d data files in %d partitions", files, parts)
	// 5 tenants over 3 days, and the tenants without a day: at most
	// 4 x 5 partitions, fewer when tenants share a bucket.
	if parts < 4 || parts > 20 || files != parts {
		t.Errorf("%d data files in %d partitions, want one a partition", files, parts)
	}

	// A second run adds a file to each partition; compaction, once the
	// partitions are closed (two days after their newest row), makes one
	// file of each again, in the same partition.
	last = e.publishEach(n, func(i int) (string, []byte) { return msg(i) })
	e.runUntilIdle(c, 2*time.Minute)
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := lake.Compact(context.Background(), c, e.js, store, lake.CompactOptions{Now: time.Now().Add(72 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != parts {
		t.Errorf("%d groups compacted, want %d", len(rep.Groups), parts)
	}
	for _, r := range rep.Groups {
		if r.Compacted == "" {
			t.Errorf("group %s: not compacted (%s)", r.Group.Partition, r.Skipped)
		}
	}
	files, parts2 := e.checkTypedPartitions(c, catalog, last, 2*n, 2*noTime)
	if files != parts || parts2 != parts {
		t.Errorf("after compaction: %d data files in %d partitions, want %d in %d", files, parts2, parts, parts)
	}
	at := e.scanTable(c, catalog, "sequence", "tenant", "created_at")
	defer at.Release()
	if at.NumRows() != int64(2*n) {
		t.Errorf("iceberg-go's scan reads %d rows, want %d", at.NumRows(), 2*n)
	}
	e.wantAllAcked()
	e.verify(c)
}

// checkTypedPartitions reads the table partitioned by day(created_at)
// and bucket(tenant, 8): sequences 1..last each in one data file, n in
// all, noTime of them in the null day; each file of one partition, in its
// folder, its manifest entry holding the partition of its rows. It
// returns the number of files and of partitions.
func (e *env) checkTypedPartitions(c *config.Connector, catalog string, last uint64, n, noTime int) (files, partitions int) {
	t := e.t
	t.Helper()
	tr := e.readTable(c, catalog)
	get := icebergtest.MinIOGet(e.mc, e.bucket)
	seen := map[uint64]string{}
	nullDay, parts := 0, map[string]bool{}
	for _, f := range tr.Files {
		if int64(len(f.Seqs)) != f.Records {
			t.Errorf("%s: %d rows, its manifest entry says %d", f.Path, len(f.Seqs), f.Records)
		}
		for _, q := range f.Seqs {
			if prev, dup := seen[q]; dup {
				t.Fatalf("sequence %d is in %s and %s", q, prev, f.Path)
			}
			seen[q] = f.Path
		}
		day, bucket := partitionOfRows(t, get, f.Path)
		folder := fmt.Sprintf("/data/created_at_day=%s/tenant_bucket=%s/", day, bucket)
		if !strings.Contains(f.Path, folder) {
			t.Errorf("data file %s of rows of day %s and bucket %s is not in folder %s", f.Path, day, bucket, folder)
		}
		mDay, mBucket := manifestPartition(t, f.Partition)
		if mDay != day || mBucket != bucket {
			t.Errorf("data file %s: its manifest entry says day %s bucket %s (%v), its rows are of day %s bucket %s", f.Path, mDay, mBucket, f.Partition, day, bucket)
		}
		if day == "null" {
			nullDay += len(f.Seqs)
		}
		parts[folder] = true
	}
	for q := uint64(1); q <= last; q++ {
		if _, ok := seen[q]; !ok {
			t.Errorf("sequence %d is in no file", q)
		}
	}
	if len(seen) != n || nullDay != noTime {
		t.Fatalf("%d sequences in the table, want %d; %d in the null day, want %d", len(seen), n, nullDay, noTime)
	}
	return len(tr.Files), len(parts)
}

// partitionOfRows reads a data file's rows and returns the day of their
// created_at and the bucket of their tenant as Iceberg names them ("null"
// for none), failing the test when the rows are of more than one.
func partitionOfRows(t *testing.T, get icebergtest.Get, loc string) (day, bucket string) {
	t.Helper()
	body, err := get(loc)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Tenant    *string    `parquet:"tenant,optional"`
		CreatedAt *time.Time `parquet:"created_at,optional"`
	}
	rows, err := parquet.Read[row](bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("%s: %v", loc, err)
	}
	days, buckets := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		d, b := "null", "null"
		if r.CreatedAt != nil {
			d = r.CreatedAt.UTC().Format("2006-01-02")
		}
		if r.Tenant != nil {
			out := iceberg.BucketTransform{NumBuckets: 8}.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: iceberg.StringLiteral(*r.Tenant)})
			b = fmt.Sprint(out.Val.Any())
		}
		days[d], buckets[b] = true, true
		day, bucket = d, b
	}
	if len(days) != 1 || len(buckets) != 1 {
		t.Fatalf("data file %s holds rows of days %v and buckets %v: more than one partition", loc, days, buckets)
	}
	return day, bucket
}

// manifestPartition returns the day and bucket of a manifest entry's
// partition, as Avro decodes it, named as Iceberg names them.
func manifestPartition(t *testing.T, p map[string]any) (day, bucket string) {
	t.Helper()
	name := func(v any) string {
		if m, ok := v.(map[string]any); ok { // an Avro union, by branch
			for _, x := range m {
				v = x
			}
		}
		switch x := v.(type) {
		case nil:
			return "null"
		case time.Time:
			return x.UTC().Format("2006-01-02")
		case int32:
			return fmt.Sprint(x)
		}
		return fmt.Sprintf("%T %v", v, v)
	}
	if p == nil {
		t.Fatal("a manifest entry without a partition")
	}
	return name(p["created_at_day"]), name(p["tenant_bucket"])
}
