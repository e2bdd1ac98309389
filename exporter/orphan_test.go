package exporter_test

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
)

// tableUUID reads the UUID jetlake recorded for the connector's table.
func (e *env) tableUUID(c *config.Connector) string {
	e.t.Helper()
	key := "table." + base64.RawURLEncoding.EncodeToString([]byte(c.Name)) + "." + c.Iceberg.Namespace + "." + c.Iceberg.Table
	v, err := e.stateBucket(c).Get(context.Background(), key)
	if err != nil {
		e.t.Fatalf("the table's UUID in the state bucket: %v", err)
	}
	return string(v.Value())
}

// The orphan sweep removes a data file in no snapshot, intent or plan only
// once it is older than orphan_age (72h) and only when its own metadata
// says this connector wrote it for this table: another connector's file,
// another table's, and a file without jetlake's metadata (another
// engine's) stay. Of its own, only a compacted file never swapped in and a
// batch's file whose every sequence the table holds go: a batch's file
// with sequences the table lacks lost its intent, and run commits it.
func TestTheOrphanSweepRemovesOnlyWhatThisConnectorWroteForThisTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	e.icebergConnector("1h")
	c := e.connector()
	e.publish(100, 2)
	e.runUntilIdle(c, time.Minute)
	id := e.tableUUID(c)
	ctx := context.Background()
	dir := "raw/lake/events/data/timestamp_hour=2026-12-01-07/subject=x/"
	own := map[string]string{objstore.MetaConnector: c.Name, objstore.MetaTable: id}
	compacted := map[string]string{objstore.MetaConnector: c.Name, objstore.MetaTable: id, objstore.MetaCompaction: "g"}
	batch := func(first, last int) map[string]string {
		return map[string]string{objstore.MetaConnector: c.Name, objstore.MetaTable: id, objstore.MetaStream: e.stream,
			objstore.MetaFirstSeq: strconv.Itoa(first), objstore.MetaLastSeq: strconv.Itoa(last), objstore.MetaCount: strconv.Itoa(last - first + 1)}
	}
	files := []struct {
		key    string
		md     map[string]string
		remove bool
	}{
		{dir + "00000000000000000001-00000000000000000001.parquet", compacted, true}, // a compaction never swapped in
		{dir + "00000000000000000002-00000000000000000002.parquet", own, false},      // an intent names it
		{dir + "00000000000000000003-00000000000000000003.parquet", nil, false},
		{dir + "00000000000000000004-00000000000000000004.parquet", map[string]string{objstore.MetaConnector: "other", objstore.MetaTable: id}, false},
		{dir + "00000000000000000005-00000000000000000005.parquet", map[string]string{objstore.MetaConnector: c.Name, objstore.MetaTable: "00000000-0000-0000-0000-000000000000"}, false},
		{dir + "00000000000000000006-00000000000000000006.parquet", batch(1, 1), true},      // a copy of a sequence the table holds
		{dir + "00000000000000000007-00000000000000000007.parquet", batch(100, 101), false}, // the table lacks sequence 101: run commits it
		{dir + "00000000000000000008-00000000000000000008.parquet", own, false},             // which sequences it holds is not known
	}
	for _, f := range files {
		if _, err := e.mc.PutObject(ctx, e.bucket, f.key, strings.NewReader("x"), 1, minio.PutObjectOptions{UserMetadata: f.md}); err != nil {
			t.Fatal(err)
		}
	}
	ikey := "intent." + base64.RawURLEncoding.EncodeToString([]byte(c.Name)) + ".Uw.Yw.orphantest"
	if _, err := e.stateBucket(c).Put(ctx, ikey, []byte(`{"id":"orphantest","key":"`+files[1].key+`"}`)); err != nil {
		t.Fatal(err)
	}
	defer e.stateBucket(c).Delete(ctx, ikey)
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := lake.Compact(ctx, c, e.js, store, lake.CompactOptions{Now: time.Now().Add(71 * time.Hour)}); err != nil || len(rep.Orphans)+len(rep.Foreign) != 0 {
		t.Fatalf("files younger than orphan_age: %+v, %v", rep, err)
	}
	rep, err := lake.Compact(ctx, c, e.js, store, lake.CompactOptions{Now: time.Now().Add(73 * time.Hour)})
	if err != nil || len(rep.Orphans) != 2 || len(rep.Foreign) != 3 {
		t.Fatalf("orphans %v, foreign %v, %v; want %s, %s and 3 foreign", rep.Orphans, rep.Foreign, err, files[0].key, files[5].key)
	}
	for _, f := range files {
		_, err := e.mc.StatObject(ctx, e.bucket, f.key, minio.StatObjectOptions{})
		if f.remove != (err != nil) {
			t.Errorf("%s: removed %v, want %v (%v)", f.key, err != nil, f.remove, err)
		}
	}
	e.verify(c)
}

// Rows another engine deleted with position deletes stay deleted: the
// delete files count as referenced (never swept), and a table with delete
// files is not compacted (a rewrite that does not apply them would bring
// the rows back).
func TestDeleteFilesOfAnotherEngineAreNeitherSweptNorCompactedAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	c := e.connector()
	e.publish(100, 2)
	e.runUntilIdle(c, time.Minute)
	ctx := context.Background()
	cat, err := sqlcat.NewCatalog(c.Name, openSQLite(t, catalog), sqlcat.SQLite, iceberg.Properties{
		iceio.S3Region: exportertest.MinIORegion, iceio.S3AccessKeyID: e.minio.AccessKey,
		iceio.S3SecretAccessKey: e.minio.SecretKey, iceio.S3EndpointURL: e.minio.Endpoint,
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete(ctx, iceberg.EqualTo(iceberg.Reference("sequence"), int64(3)), nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	before := e.objectKeys("raw/lake/events/data/")
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := lake.Compact(ctx, c, e.js, store, lake.CompactOptions{Now: time.Now().Add(100 * time.Hour)})
	if err != nil || len(rep.Groups) != 0 || len(rep.Orphans) != 0 {
		t.Fatalf("compaction of a table with delete files: groups %d, orphans %v, %v", len(rep.Groups), rep.Orphans, err)
	}
	after := e.objectKeys("raw/lake/events/data/")
	if len(after) != len(before) {
		t.Fatalf("%d files under data/ before the sweep, %d after", len(before), len(after))
	}
	if err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithSelectedFields("sequence")).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if rows := at.NumRows(); rows != 99 {
		t.Fatalf("%d rows, want 99: the deleted row came back", rows)
	}
}

// objectKeys lists the keys under prefix.
func (e *env) objectKeys(prefix string) []string {
	e.t.Helper()
	var out []string
	for obj := range e.mc.ListObjects(context.Background(), e.bucket, minio.ListObjectsOptions{Recursive: true, Prefix: prefix}) {
		if obj.Err != nil {
			e.t.Fatal(obj.Err)
		}
		out = append(out, obj.Key)
	}
	return out
}

// A connector whose catalog no longer has its table (switched to a fresh
// catalog, say) neither creates an empty table at the same location nor
// sweeps the files of the one before: run and compact stop, saying why.
func TestACatalogSwitchStopsInsteadOfMakingANewTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	c := e.connector()
	last := e.publish(100, 2)
	e.runUntilIdle(c, time.Minute)
	files := e.objectKeys("raw/lake/events/data/")

	fresh := filepath.Join(t.TempDir(), "fresh.db")
	c.Iceberg.URI = "sqlite://" + fresh
	err := e.runUntilIdleErr(c, time.Minute)
	var changed *state.TableChangedError
	if !errors.As(err, &changed) || !failure.IsPermanent(err) {
		t.Fatalf("run on a fresh catalog: %v, want a permanent *TableChangedError", err)
	}
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.Compact(context.Background(), c, e.js, store, lake.CompactOptions{Now: time.Now().Add(100 * time.Hour)}); err == nil {
		t.Fatal("compact on a fresh catalog: no error")
	}
	if got := e.objectKeys("raw/lake/events/data/"); len(got) != len(files) {
		t.Fatalf("%d data files after, %d before", len(got), len(files))
	}
	if tr := e.readTable(c, catalog); len(tr.Check(last)) > 0 {
		t.Fatal("the table changed")
	}
}
