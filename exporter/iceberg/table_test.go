package iceberg_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/exportertest"
	"github.com/jetlake/jetlake/exporter/iceberg"
	"github.com/jetlake/jetlake/exporter/iceberg/icebergtest"
	"github.com/jetlake/jetlake/formats"
)

// tableEnv is a MinIO bucket and a sqlite catalog for one test.
type tableEnv struct {
	t        *testing.T
	ms       *exportertest.MinIOServer
	mc       *minio.Client
	bucket   string
	cfg      iceberg.Config
	enc      formats.Encoder
	options  formats.Options
	db       *sql.DB // the catalog's database, for the independent reader
	postgres bool
}

// catalogs runs test once per SQL catalog: the embedded sqlite file and a
// PostgreSQL server.
func catalogs(t *testing.T, test func(t *testing.T, e *tableEnv)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) { test(t, newTableEnv(t, kind)) })
	}
}

func newTableEnv(t *testing.T, catalog string) *tableEnv {
	t.Helper()
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	uri := "sqlite://" + filepath.Join(t.TempDir(), "catalog.db")
	if catalog == "postgres" {
		uri = exportertest.Postgres(t, exportertest.PostgresOptions{}).URL
	}
	ctx := context.Background()
	if err := ms.CreateBucket(ctx, "lake"); err != nil {
		t.Fatal(err)
	}
	mc, err := ms.Client()
	if err != nil {
		t.Fatal(err)
	}
	opts := formats.Options{Format: formats.Parquet, FieldIDs: true}
	enc, err := formats.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	driver, dsn := "sqlite", "file:"+strings.TrimPrefix(uri, "sqlite://")
	if catalog == "postgres" {
		driver, dsn = "pgx", uri
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &tableEnv{t: t, ms: ms, mc: mc, bucket: "lake", enc: enc, options: opts, db: db, postgres: catalog == "postgres",
		cfg: iceberg.Config{
			Catalog:      "test",
			URI:          uri,
			Namespace:    "lake",
			Table:        "events",
			Warehouse:    "s3://lake/raw",
			Partitioning: config.DefaultPartitioning,
			S3: iceberg.S3{Endpoint: ms.Endpoint, Region: exportertest.MinIORegion,
				AccessKeyID: ms.AccessKey, SecretAccessKey: ms.SecretKey},
		}}
}

func (e *tableEnv) open() *iceberg.Table {
	e.t.Helper()
	tbl, err := iceberg.Open(context.Background(), e.cfg, formats.Fields(e.options))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { tbl.Close() })
	return tbl
}

// read reads the table as an independent reader and requires sequences
// 1..last each in exactly one file, and snapshots snapshots.
func (e *tableEnv) read(last uint64, snapshots int) *icebergtest.Table {
	e.t.Helper()
	tr, err := icebergtest.Read(e.db, e.postgres, e.cfg.Catalog, e.cfg.Namespace, e.cfg.Table, icebergtest.MinIOGet(e.mc, e.bucket))
	if err != nil {
		e.t.Fatal(err)
	}
	if problems := tr.Check(last); len(problems) > 0 {
		e.t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	if tr.Snapshots != snapshots {
		e.t.Fatalf("%d snapshots, want %d", tr.Snapshots, snapshots)
	}
	return tr
}

// file writes a data file of one subject and hour with sequences first to
// last, under the table's data folder, and returns its location.
func (e *tableEnv) file(tbl *iceberg.Table, subject string, hour time.Time, first, last uint64) string {
	e.t.Helper()
	b := e.enc.NewBatch()
	for q := first; q <= last; q++ {
		rec := &formats.Record{Stream: "S", Subject: subject, Sequence: q, Time: hour.Add(time.Duration(q) * time.Millisecond), Data: []byte(`{"q":1}`)}
		if err := b.Append(rec); err != nil {
			e.t.Fatal(err)
		}
	}
	body, err := b.Finish()
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := tbl.Partitioner()
	if err != nil {
		e.t.Fatal(err)
	}
	dir := p.AppendDir(nil, "S", subject, first, hour)
	loc := fmt.Sprintf("%s/data/%s/%020d-%020d.parquet", tbl.Location(), dir, first, last)
	key := strings.TrimPrefix(loc, "s3://"+e.bucket+"/")
	if _, err := e.mc.PutObject(context.Background(), e.bucket, key, bytes.NewReader(body.Bytes()), body.Len(), minio.PutObjectOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return loc
}

func TestATableIsCreatedAndACommitLandsOnce(t *testing.T) {
	catalogs(t, aTableIsCreatedAndACommitLandsOnce)
}

func aTableIsCreatedAndACommitLandsOnce(t *testing.T, e *tableEnv) {
	ctx := context.Background()
	tbl := e.open()
	if want := "s3://lake/raw/lake/events"; tbl.Location() != want {
		t.Fatalf("location %s, want %s", tbl.Location(), want)
	}
	hour := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	files := []string{e.file(tbl, "s.a", hour, 1, 10), e.file(tbl, "s.b", hour, 11, 20)}
	c := iceberg.Commit{ID: "c1", Files: files, Summary: map[string]string{"jetlake.stream": "S"}}
	if err := tbl.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	// The same commit again, as after a crash that lost its answer: no
	// second snapshot.
	if err := tbl.Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	if n := tbl.Snapshots(); n != 1 {
		t.Fatalf("%d snapshots, want 1", n)
	}
	// Another process opening the table sees the commit.
	again := e.open()
	if !again.Committed("c1") || again.Committed("c2") {
		t.Fatal("the commit's id is not found in the table reopened")
	}
	got, err := again.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("files %v, want the 2 committed", got)
	}
	if tr := e.read(20, 1); len(tr.Files) != 2 {
		t.Fatalf("the reader found %d files, want 2", len(tr.Files))
	}
}

func TestATableThatDoesNotFitIsRefusedWithTheDifference(t *testing.T) {
	catalogs(t, aTableThatDoesNotFitIsRefusedWithTheDifference)
}

func aTableThatDoesNotFitIsRefusedWithTheDifference(t *testing.T, e *tableEnv) {
	e.open()
	e.cfg.Partitioning = []config.Partition{{Column: "timestamp", Transform: "day"}}
	_, err := iceberg.Open(context.Background(), e.cfg, formats.Fields(e.options))
	if err == nil || !strings.Contains(err.Error(), "partitioned by [hour(timestamp), identity(subject)], the connector by [day(timestamp)]") {
		t.Fatalf("Open of a table partitioned otherwise: %v", err)
	}
	e.cfg.Partitioning = config.DefaultPartitioning
	_, err = iceberg.Open(context.Background(), e.cfg, formats.Fields(formats.Options{Format: formats.Parquet, Headers: true, FieldIDs: true}))
	if err == nil || !strings.Contains(err.Error(), "column 5 is 5 payload string optional in the table, the connector writes 5 headers string optional") {
		t.Fatalf("Open with another schema: %v", err)
	}
}

// Two writers committing to one table at once conflict ("branch main has
// changed"); each retries from the table as it is, and every commit lands
// exactly once.
func TestConcurrentCommitsAllLandOnce(t *testing.T) { catalogs(t, concurrentCommitsAllLandOnce) }

func concurrentCommitsAllLandOnce(t *testing.T, e *tableEnv) {
	ctx := context.Background()
	a, b := e.open(), e.open()
	hour := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	const per = 5
	var wg sync.WaitGroup
	errs := make(chan error, 2*per)
	for w, tbl := range []*iceberg.Table{a, b} {
		var files []string
		for i := range per {
			first := uint64(w*per+i)*10 + 1
			files = append(files, e.file(tbl, "s.a", hour, first, first+9))
		}
		wg.Go(func() {
			for i, f := range files {
				errs <- tbl.Commit(ctx, iceberg.Commit{ID: fmt.Sprintf("w%d-%d", w, i), Files: []string{f}})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := e.open()
	got, err := c.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*per || c.Snapshots() != 2*per {
		t.Fatalf("%d files in %d snapshots, want %d in %d", len(got), c.Snapshots(), 2*per, 2*per)
	}
	for w := range 2 {
		for i := range per {
			if !c.Committed(fmt.Sprintf("w%d-%d", w, i)) {
				t.Errorf("commit w%d-%d is missing", w, i)
			}
		}
	}
	e.read(2*per*10, 2*per)
}
