package icebergtest_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// file IO
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // the SQL catalog's driver

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
)

const token = "test-token"

// restEnv is a REST catalog served over a sqlite SQL catalog whose
// warehouse is a MinIO bucket, and a REST client of it.
type restEnv struct {
	ms     *exportertest.MinIOServer
	db     *sql.DB
	sqlCat *sqlcat.Catalog
	srv    *icebergtest.RESTServer
	cat    *rest.Catalog
	s3     iceberg.Properties
}

func newRESTEnv(t *testing.T) *restEnv {
	t.Helper()
	exportertest.SkipShort(t)
	ctx := context.Background()
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	if err := ms.CreateBucket(ctx, "lake"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s3 := iceberg.Properties{
		iceio.S3Region:          exportertest.MinIORegion,
		iceio.S3AccessKeyID:     ms.AccessKey,
		iceio.S3SecretAccessKey: ms.SecretKey,
		iceio.S3EndpointURL:     ms.Endpoint,
	}
	props := iceberg.Properties{"warehouse": "s3://lake/raw"}
	for k, v := range s3 {
		props[k] = v
	}
	sqlCat, err := sqlcat.NewCatalog("test", db, sqlcat.SQLite, props)
	if err != nil {
		t.Fatal(err)
	}
	srv := icebergtest.StartREST(t, sqlCat, token)
	cat, err := rest.NewCatalog(ctx, "lake", srv.URL, rest.WithOAuthToken(token), rest.WithAdditionalProps(s3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return &restEnv{ms: ms, db: db, sqlCat: sqlCat, srv: srv, cat: cat, s3: s3}
}

var (
	testSchema = iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "sequence", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "subject", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	)
	arrowSchema = arrow.NewSchema([]arrow.Field{
		{Name: "sequence", Type: arrow.PrimitiveTypes.Int64},
		{Name: "subject", Type: arrow.BinaryTypes.String},
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
	hour = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
)

// appendRows appends sequences first to last of subject, in one hour, to
// tbl in one transaction, and returns the committed table.
func appendRows(ctx context.Context, tbl *table.Table, subject string, first, last int64) (*table.Table, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrowSchema)
	defer b.Release()
	for q := first; q <= last; q++ {
		b.Field(0).(*array.Int64Builder).Append(q)
		b.Field(1).(*array.StringBuilder).Append(subject)
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(hour.Add(time.Duration(q) * time.Second).UnixMicro()))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(arrowSchema, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	txn := tbl.NewTransaction()
	if err := txn.Append(ctx, rdr, iceberg.Properties{"test.last": subject}); err != nil {
		return nil, err
	}
	return txn.Commit(ctx)
}

func TestREST(t *testing.T) {
	e := newRESTEnv(t)
	ctx := context.Background()
	ns := table.Identifier{"lake"}
	ident := table.Identifier{"lake", "events"}

	if err := e.cat.CreateNamespace(ctx, ns, iceberg.Properties{"owner": "test"}); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.CreateNamespace(ctx, ns, nil); !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Fatalf("creating the namespace again: %v, want ErrNamespaceAlreadyExists", err)
	}
	for _, c := range []struct {
		ns   table.Identifier
		want bool
	}{{ns, true}, {table.Identifier{"missing"}, false}} {
		if ok, err := e.cat.CheckNamespaceExists(ctx, c.ns); err != nil || ok != c.want {
			t.Fatalf("namespace %v exists: %v, %v; want %v", c.ns, ok, err, c.want)
		}
	}
	props, err := e.cat.LoadNamespaceProperties(ctx, ns)
	if err != nil || props["owner"] != "test" {
		t.Fatalf("namespace properties: %v, %v", props, err)
	}
	nss, err := e.cat.ListNamespaces(ctx, nil)
	if err != nil || !slices.ContainsFunc(nss, func(n table.Identifier) bool { return slices.Equal(n, ns) }) {
		t.Fatalf("namespaces: %v, %v", nss, err)
	}

	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "subject", Transform: iceberg.IdentityTransform{}})
	tbl, err := e.cat.CreateTable(ctx, ident, testSchema, catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(iceberg.Properties{"format-version": "2", "commit.retry.num-retries": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := tbl.Spec(); got.NumFields() != 1 || got.Field(0).Name != "subject" {
		t.Fatalf("partition spec %v, want identity(subject)", got)
	}
	if !strings.HasPrefix(tbl.Location(), "s3://lake/raw/") || tbl.Metadata().Version() != 2 {
		t.Fatalf("table at %s, format version %d", tbl.Location(), tbl.Metadata().Version())
	}
	if _, err := e.cat.CreateTable(ctx, ident, testSchema); !errors.Is(err, catalog.ErrTableAlreadyExists) {
		t.Fatalf("creating the table again: %v, want ErrTableAlreadyExists", err)
	}
	if ok, err := e.cat.CheckTableExists(ctx, ident); err != nil || !ok {
		t.Fatalf("table exists: %v, %v", ok, err)
	}
	var tables []table.Identifier
	for id, err := range e.cat.ListTables(ctx, ns) {
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, id)
	}
	if len(tables) != 1 || !slices.Equal(tables[0], ident) {
		t.Fatalf("tables %v, want %v", tables, ident)
	}
	for _, missing := range []table.Identifier{{"lake", "missing"}, {"missing", "events"}} {
		if _, err := e.cat.LoadTable(ctx, missing); !errors.Is(err, catalog.ErrNoSuchTable) {
			t.Fatalf("loading %v: %v, want ErrNoSuchTable", missing, err)
		}
		if ok, err := e.cat.CheckTableExists(ctx, missing); err != nil || ok {
			t.Fatalf("%v exists: %v, %v", missing, ok, err)
		}
	}

	// An append: the client writes the data file, the manifest and the
	// manifest list to MinIO, the SQL catalog the metadata file.
	tbl, err = e.cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err = appendRows(ctx, tbl, "a", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.Summary == nil || snap.Summary.Properties["test.last"] != "a" || snap.Summary.Properties["added-records"] != "3" {
		t.Fatalf("snapshot after the append: %+v", snap)
	}
	check := func(last uint64, snapshots int) {
		t.Helper()
		for _, c := range []catalog.Catalog{e.cat, e.sqlCat} {
			got, err := c.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			if got.CurrentSnapshot() == nil || got.CurrentSnapshot().SnapshotID != tbl.CurrentSnapshot().SnapshotID {
				t.Fatalf("%T loads snapshot %+v, want %d", c, got.CurrentSnapshot(), tbl.CurrentSnapshot().SnapshotID)
			}
		}
		mc, err := e.ms.Client()
		if err != nil {
			t.Fatal(err)
		}
		tr, err := icebergtest.Read(e.db, false, "test", "lake", "events", icebergtest.MinIOGet(mc, "lake"))
		if err != nil {
			t.Fatal(err)
		}
		if problems := tr.Check(last); len(problems) > 0 {
			t.Fatalf("reader: %v", problems)
		}
		if tr.Snapshots != snapshots {
			t.Fatalf("reader: %d snapshots, want %d", tr.Snapshots, snapshots)
		}
	}
	check(3, 1)

	// A commit the server fails, then the same rows again from a
	// refreshed table.
	e.srv.FailCommits(1)
	if _, err := appendRows(ctx, tbl, "b", 4, 5); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("commit with FailCommits(1): %v, want ErrCommitFailed", err)
	}
	if tbl, err = appendRows(ctx, tbl, "b", 4, 5); err != nil {
		t.Fatal(err)
	}
	check(5, 2)

	// A commit from a table whose snapshot is no longer current: the SQL
	// catalog's requirement fails and the client sees a commit conflict.
	stale := tbl
	if tbl, err = appendRows(ctx, tbl, "c", 6, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := appendRows(ctx, stale, "d", 7, 7); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("commit from a stale table: %v, want ErrCommitFailed", err)
	}
	check(6, 3)

	reqs := e.srv.Requests()
	for key, want := range map[string]int{
		"POST /v1/namespaces/{namespace}/tables/{table}": 5,
		"HEAD /v1/namespaces/{namespace}":                2,
		"POST /v1/namespaces/{namespace}/tables":         2,
	} {
		if reqs[key] != want {
			t.Errorf("%d requests %s, want %d (all: %v)", reqs[key], key, want, reqs)
		}
	}

	if err := e.cat.DropNamespace(ctx, ns); !errors.Is(err, catalog.ErrNamespaceNotEmpty) {
		t.Fatalf("dropping a namespace with a table: %v, want ErrNamespaceNotEmpty", err)
	}
	if err := e.cat.DropTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.DropTable(ctx, ident); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("dropping the table again: %v, want ErrNoSuchTable", err)
	}
	if err := e.cat.DropNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.cat.CheckNamespaceExists(ctx, ns); err != nil || ok {
		t.Fatalf("dropped namespace exists: %v, %v", ok, err)
	}
}

func TestRESTToken(t *testing.T) {
	e := newRESTEnv(t)
	ctx := context.Background()
	for _, opts := range [][]rest.Option{
		{rest.WithOAuthToken("wrong")},
		{},
	} {
		if _, err := rest.NewCatalog(ctx, "lake", e.srv.URL, opts...); !errors.Is(err, rest.ErrUnauthorized) {
			t.Errorf("catalog with options %d: %v, want ErrUnauthorized", len(opts), err)
		}
	}
	// Loaded by properties, as a configuration would.
	props := iceberg.Properties{"type": "rest", "uri": e.srv.URL, "token": token}
	for k, v := range e.s3 {
		props[k] = v
	}
	cat, err := catalog.Load(ctx, "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.ListNamespaces(ctx, nil); err != nil {
		t.Fatal(err)
	}
	props["token"] = "wrong"
	if _, err := catalog.Load(ctx, "lake", props); !errors.Is(err, rest.ErrUnauthorized) {
		t.Fatalf("catalog.Load with a wrong token: %v, want ErrUnauthorized", err)
	}
}
