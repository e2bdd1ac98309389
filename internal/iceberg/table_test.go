package iceberg_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	iceberggo "github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
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
	opts := formats.Options{Format: formats.Parquet}
	opts.FieldIDs = formats.PositionalFieldIDs(formats.Fields(opts))
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
	p, err := tbl.Partitioner(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	dir := p.AppendDir(nil, "S", subject, first, hour, nil)
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
	// A column dropped (or renamed: the old name is gone) is refused.
	_, err = iceberg.Open(context.Background(), e.cfg, formats.Fields(formats.Options{Format: formats.Parquet, OmitPayload: true}))
	if err == nil || !strings.Contains(err.Error(), "column payload string is in the table but not written by the connector: dropping or renaming a column is refused") {
		t.Fatalf("Open without a column of the table: %v", err)
	}
	var me *iceberg.MismatchError
	if !errors.As(err, &me) {
		t.Fatalf("%T is not a *MismatchError", err)
	}
}

// A typed column added to the connector is added to the table, an int
// column that became long is widened, and rows written before read the new
// column as null; a column whose type changed otherwise is refused.
func TestTheSchemaEvolvesWithTheConnector(t *testing.T) {
	catalogs(t, theSchemaEvolvesWithTheConnector)
}

func theSchemaEvolvesWithTheConnector(t *testing.T, e *tableEnv) {
	ctx := context.Background()
	hour := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	e.useColumns(formats.Column{Name: "q", Source: "q", Type: formats.TypeInt32})
	tbl := e.open()
	if err := tbl.Commit(ctx, iceberg.Commit{ID: "before", Files: []string{e.file(tbl, "s.a", hour, 1, 10)}}); err != nil {
		t.Fatal(err)
	}
	schemaBefore := e.summary(tbl, "before")[iceberg.SchemaIDProperty]

	// q becomes long, and a column r comes after it.
	e.useColumns(formats.Column{Name: "q", Source: "q", Type: formats.TypeInt64}, formats.Column{Name: "r", Source: "q", Type: formats.TypeJSON})
	tbl = e.open()
	if got := tbl.Evolved().String(); got != "adds column r string; widens q from int to long" {
		t.Fatalf("evolution %q", got)
	}
	ids := tbl.FieldIDs()
	if ids["r"] != len(ids) || ids["q"] != 5 {
		t.Fatalf("field ids %v: want q kept and r added last", ids)
	}
	e.useFieldIDs(ids)
	if err := tbl.Commit(ctx, iceberg.Commit{ID: "after", Files: []string{e.file(tbl, "s.a", hour, 11, 20)}}); err != nil {
		t.Fatal(err)
	}
	if after := e.summary(tbl, "after")[iceberg.SchemaIDProperty]; after == schemaBefore || after == "" {
		t.Fatalf("schema id %q after the change, %q before", after, schemaBefore)
	}
	// Opened again, nothing changes.
	if again := e.open(); !again.Evolved().Empty() {
		t.Fatalf("a second open changed %s", again.Evolved())
	}

	// Arrow, through iceberg-go's scan, reads both files together.
	rows := e.scan(ctx)
	if len(rows) != 20 {
		t.Fatalf("%d rows, want 20", len(rows))
	}
	for _, r := range rows {
		old := r.seq <= 10
		if r.q != 1 || old != (r.r == nil) || !old && *r.r != "1" {
			t.Fatalf("row %d: q %d, r %v", r.seq, r.q, r.r)
		}
	}
	e.read(20, 2)

	// Retyped otherwise: refused, naming the column.
	e.useColumns(formats.Column{Name: "q", Source: "q", Type: formats.TypeBoolean}, formats.Column{Name: "r", Source: "q", Type: formats.TypeJSON})
	_, err := iceberg.Open(ctx, e.cfg, formats.Fields(e.options))
	if err == nil || !strings.Contains(err.Error(), "column q is long in the table, the connector writes boolean: changing a column's type is refused") {
		t.Fatalf("Open with q retyped: %v", err)
	}
}

// useColumns makes the connector write these typed columns, with the field
// ids of a new table.
func (e *tableEnv) useColumns(cols ...formats.Column) {
	e.t.Helper()
	e.options.Columns = cols
	e.useFieldIDs(formats.PositionalFieldIDs(formats.Fields(e.options)))
}

// useFieldIDs makes the connector write these field ids.
func (e *tableEnv) useFieldIDs(ids map[string]int) {
	e.t.Helper()
	e.options.FieldIDs = ids
	enc, err := formats.New(e.options)
	if err != nil {
		e.t.Fatal(err)
	}
	e.enc = enc
}

// summary returns the snapshot summary of the commit with id.
func (e *tableEnv) summary(tbl *iceberg.Table, id string) map[string]string {
	e.t.Helper()
	s, ok := tbl.CommitSummary(id)
	if !ok {
		e.t.Fatalf("no snapshot of commit %s", id)
	}
	return s
}

type scannedRow struct {
	seq int64
	q   int64
	r   *string
}

// scan reads the table's rows with iceberg-go's scan into Arrow.
func (e *tableEnv) scan(ctx context.Context) []scannedRow {
	e.t.Helper()
	dialect := sqlcat.SQLite
	if e.postgres {
		dialect = sqlcat.Postgres
	}
	cat, err := sqlcat.NewCatalog(e.cfg.Catalog, e.db, dialect, iceberggo.Properties{
		iceio.S3Region: e.cfg.S3.Region, iceio.S3AccessKeyID: e.cfg.S3.AccessKeyID,
		iceio.S3SecretAccessKey: e.cfg.S3.SecretAccessKey, iceio.S3EndpointURL: e.cfg.S3.Endpoint,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{e.cfg.Namespace, e.cfg.Table})
	if err != nil {
		e.t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithSelectedFields("sequence", "q", "r")).ToArrowTable(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer at.Release()
	var out []scannedRow
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		seq := rec.Column(0).(*array.Int64)
		q := rec.Column(1).(*array.Int64)
		r := rec.Column(2).(*array.String)
		for i := range int(rec.NumRows()) {
			row := scannedRow{seq: seq.Value(i), q: q.Value(i)}
			if !r.IsNull(i) {
				v := r.Value(i)
				row.r = &v
			}
			out = append(out, row)
		}
	}
	return out
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
