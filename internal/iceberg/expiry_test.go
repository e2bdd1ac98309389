package iceberg_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	iceberggo "github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/internal/iceberg"
)

// Snapshot expiry removes the files that only expired snapshots name, as
// their manifests say. A manifest naming files outside the table's
// location (another writer's, or forged) does not make jetlake remove
// them: they stay in place, the expiry says which, and the table's own
// files are expired as before.
func TestExpiryLeavesInPlaceTheFilesAManifestNamesOutsideTheTable(t *testing.T) {
	e := newTableEnv(t, "sqlite")
	ctx := context.Background()
	tbl := e.open()
	files := e.files(tbl, 2)
	if err := tbl.Commit(ctx, iceberg.Commit{ID: "c1", Files: []string{files[0].Location, files[1].Location}}); err != nil {
		t.Fatal(err)
	}
	// True data files of the table, copied outside its folder: iceberg-go
	// reads them without complaint.
	obj, err := e.mc.GetObject(ctx, e.bucket, strings.TrimPrefix(files[0].Location, "s3://"+e.bucket+"/"), minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(obj)
	obj.Close()
	if err != nil {
		t.Fatal(err)
	}
	var foreign []string
	for _, key := range []string{
		"hr/salaries.parquet",
		"raw/lake/events2/data/00000000000000000001-00000000000000000010.parquet",
		"raw/lake/events-other/data/00000000000000000001-00000000000000000010.parquet",
		"raw/lake/00000000000000000001-00000000000000000010.parquet",
	} {
		if _, err := e.mc.PutObject(ctx, e.bucket, key, strings.NewReader(string(body)), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		foreign = append(foreign, "s3://"+e.bucket+"/"+key)
	}

	// Another writer, through iceberg-go, adds them to the table, then
	// removes them with one of jetlake's files: only the snapshot before
	// names them, as added.
	cat, err := sqlcat.NewCatalog(e.cfg.Catalog, e.db, sqlcat.SQLite, iceberggo.Properties{
		iceio.S3Region: e.cfg.S3.Region, iceio.S3AccessKeyID: e.cfg.S3.AccessKeyID,
		iceio.S3SecretAccessKey: e.cfg.S3.SecretAccessKey, iceio.S3EndpointURL: e.cfg.S3.Endpoint,
	})
	if err != nil {
		t.Fatal(err)
	}
	other, err := cat.LoadTable(ctx, table.Identifier{e.cfg.Namespace, e.cfg.Table})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := other.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var dfs []iceberggo.DataFile
	for _, loc := range foreign {
		df, err := table.FileToDataFile(ctx, fs, loc, other.Schema(), other.Spec(), 0, other.Properties())
		if err != nil {
			t.Fatal(err)
		}
		dfs = append(dfs, df)
	}
	tx := other.NewTransaction()
	if err := tx.AddDataFiles(ctx, dfs, nil); err != nil {
		t.Fatal(err)
	}
	if other, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx = other.NewTransaction()
	if err := tx.ReplaceDataFiles(ctx, append(slices.Clone(foreign), files[0].Location), nil, nil); err != nil {
		t.Fatal(err)
	}
	if other, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var lists []string
	for _, s := range other.Metadata().Snapshots() {
		if s.SnapshotID != other.CurrentSnapshot().SnapshotID {
			lists = append(lists, s.ManifestList)
		}
	}
	if len(lists) != 2 {
		t.Fatalf("%d snapshots before the newest, want 2", len(lists))
	}

	// jetlake expires all but the newest snapshot.
	if err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	removed, expiryErr := tbl.ExpireSnapshots(ctx, 1, 0)
	if removed != 2 || tbl.Snapshots() != 1 {
		t.Fatalf("expiry removed %d snapshots and kept %d, want 2 and 1 (%v)", removed, tbl.Snapshots(), expiryErr)
	}
	exists := func(loc string) bool {
		_, err := e.mc.StatObject(ctx, e.bucket, strings.TrimPrefix(loc, "s3://"+e.bucket+"/"), minio.StatObjectOptions{})
		var er minio.ErrorResponse
		if err != nil && !(errors.As(err, &er) && er.Code == "NoSuchKey") {
			t.Fatal(err)
		}
		return err == nil
	}
	for _, loc := range foreign {
		if !exists(loc) {
			t.Errorf("%s, outside the table's location, was removed", loc)
		}
	}
	// Inside, the files only the expired snapshots named are gone, and
	// the table's data is intact.
	for _, loc := range append(lists, files[0].Location) {
		if exists(loc) {
			t.Errorf("%s, named only by expired snapshots, is still there", loc)
		}
	}
	if got, err := tbl.Files(ctx); err != nil || !slices.Equal(got, []string{files[1].Location}) {
		t.Fatalf("the table holds %q (%v), want %s", got, err, files[1].Location)
	}
	if !exists(files[1].Location) {
		t.Fatalf("%s, in the newest snapshot, was removed", files[1].Location)
	}
	// The expiry says what it left, on one line, as a warning does.
	var oe *iceberg.OutsideTableError
	switch {
	case !errors.As(expiryErr, &oe):
		t.Fatalf("the expiry's error %v, want an *iceberg.OutsideTableError", expiryErr)
	case !slices.Contains(foreign, oe.Path) || oe.Location != tbl.Location():
		t.Fatalf("the refusal %+v does not name a foreign file and the table's location %s", oe, tbl.Location())
	case strings.Contains(expiryErr.Error(), "\n") || !strings.Contains(expiryErr.Error(), "3 more"):
		t.Fatalf("the expiry's error is not one line counting the other refused files: %q", expiryErr)
	}
	t.Logf("expiry: %v", expiryErr)
}
