package icebergtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	gluecat "github.com/apache/iceberg-go/catalog/glue"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"

	"github.com/jetlake/jetlake/internal/exportertest"
)

// glueClient returns an AWS SDK Glue client of srv, signing with key AKIDSDK.
func glueClient(srv *GlueServer) *glue.Client {
	return glue.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSDK", "x", ""),
	})
}

// TestGlueServerAnswersLikeGlue drives the fake through the AWS SDK's Glue
// client: outputs decode, errors come back as the SDK's exception types.
func TestGlueServerAnswersLikeGlue(t *testing.T) {
	ctx := context.Background()
	srv := StartGlue(t)
	gc := glueClient(srv)

	_, err := gc.GetDatabase(ctx, &glue.GetDatabaseInput{Name: aws.String("lake")})
	if !errors.As(err, new(*types.EntityNotFoundException)) {
		t.Fatalf("GetDatabase of a missing database: %v, want EntityNotFoundException", err)
	}
	dbIn := &glue.CreateDatabaseInput{DatabaseInput: &types.DatabaseInput{
		Name: aws.String("Lake"), LocationUri: aws.String("s3://lake/raw"), Parameters: map[string]string{"k": "v"},
	}}
	if _, err := gc.CreateDatabase(ctx, dbIn); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.CreateDatabase(ctx, dbIn); !errors.As(err, new(*types.AlreadyExistsException)) {
		t.Fatalf("CreateDatabase again: %v, want AlreadyExistsException", err)
	}
	db, err := gc.GetDatabase(ctx, &glue.GetDatabaseInput{Name: aws.String("lake")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(db.Database.Name) != "lake" || aws.ToString(db.Database.LocationUri) != "s3://lake/raw" || db.Database.Parameters["k"] != "v" {
		t.Errorf("GetDatabase: %+v", db.Database)
	}

	tblIn := func(loc string) *types.TableInput {
		return &types.TableInput{
			Name:              aws.String("events"),
			TableType:         aws.String("EXTERNAL_TABLE"),
			Parameters:        map[string]string{"table_type": "ICEBERG", "metadata_location": loc},
			StorageDescriptor: &types.StorageDescriptor{Location: aws.String("s3://lake/raw/lake/events")},
		}
	}
	if _, err := gc.CreateTable(ctx, &glue.CreateTableInput{DatabaseName: aws.String("nope"), TableInput: tblIn("m0")}); !errors.As(err, new(*types.EntityNotFoundException)) {
		t.Fatalf("CreateTable in a missing database: %v, want EntityNotFoundException", err)
	}
	if _, err := gc.CreateTable(ctx, &glue.CreateTableInput{DatabaseName: aws.String("lake"), TableInput: tblIn("m1")}); err != nil {
		t.Fatal(err)
	}
	got, err := gc.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String("lake"), Name: aws.String("events")})
	if err != nil {
		t.Fatal(err)
	}
	if v := aws.ToString(got.Table.VersionId); v != "1" || aws.ToString(got.Table.DatabaseName) != "lake" ||
		aws.ToString(got.Table.TableType) != "EXTERNAL_TABLE" || got.Table.Parameters["metadata_location"] != "m1" ||
		aws.ToString(got.Table.StorageDescriptor.Location) != "s3://lake/raw/lake/events" {
		t.Errorf("GetTable: %+v", got.Table)
	}

	update := func(version, loc string) error {
		_, err := gc.UpdateTable(ctx, &glue.UpdateTableInput{
			DatabaseName: aws.String("lake"), TableInput: tblIn(loc), VersionId: aws.String(version), SkipArchive: aws.Bool(true),
		})
		return err
	}
	if err := update("1", "m2"); err != nil {
		t.Fatal(err)
	}
	if err := update("1", "m3"); !errors.As(err, new(*types.ConcurrentModificationException)) {
		t.Fatalf("UpdateTable of a stale version: %v, want ConcurrentModificationException", err)
	}
	srv.FailUpdates(1)
	if err := update("2", "m3"); !errors.As(err, new(*types.ConcurrentModificationException)) {
		t.Fatalf("UpdateTable after FailUpdates(1): %v, want ConcurrentModificationException", err)
	}
	if err := update("2", "m3"); err != nil {
		t.Fatal(err)
	}
	if loc := srv.MetadataLocation("lake", "events"); loc != "m3" {
		t.Errorf("MetadataLocation = %q, want m3", loc)
	}
	list, err := gc.GetTables(ctx, &glue.GetTablesInput{DatabaseName: aws.String("lake")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.TableList) != 1 || aws.ToString(list.TableList[0].VersionId) != "3" {
		t.Errorf("GetTables: %+v", list.TableList)
	}
	if _, err := gc.DeleteTable(ctx, &glue.DeleteTableInput{DatabaseName: aws.String("lake"), Name: aws.String("events")}); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String("lake"), Name: aws.String("events")}); !errors.As(err, new(*types.EntityNotFoundException)) {
		t.Fatalf("GetTable after DeleteTable: %v, want EntityNotFoundException", err)
	}
	if srv.MetadataLocation("lake", "events") != "" {
		t.Error("MetadataLocation of a deleted table is not empty")
	}
	if _, err := gc.DeleteDatabase(ctx, &glue.DeleteDatabaseInput{Name: aws.String("lake")}); err != nil {
		t.Fatal(err)
	}
	dbs, err := gc.GetDatabases(ctx, &glue.GetDatabasesInput{})
	if err != nil || len(dbs.DatabaseList) != 0 {
		t.Errorf("GetDatabases after DeleteDatabase: %v, %+v", err, dbs)
	}

	req, _ := http.NewRequest(http.MethodPost, srv.Endpoint, strings.NewReader("{}"))
	req.Header.Set("X-Amz-Target", "AWSGlue.GetPartitions")
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "GetPartitions") {
		t.Errorf("unknown operation: %d %s, want 400 naming GetPartitions", resp.StatusCode, body)
	}
	if keys := srv.AccessKeys(); !slices.Equal(keys, []string{"AKIDSDK"}) {
		t.Errorf("AccessKeys = %v, want [AKIDSDK]", keys)
	}
}

// TestGlueCatalogCommitsThroughMinIO runs iceberg-go's Glue catalog against
// the fake, with the table's files in MinIO, and reads the result back
// with the independent reader.
func TestGlueCatalogCommitsThroughMinIO(t *testing.T) {
	exportertest.SkipShort(t)
	ctx := context.Background()
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	if err := ms.CreateBucket(ctx, "lake"); err != nil {
		t.Fatal(err)
	}
	mc, err := ms.Client()
	if err != nil {
		t.Fatal(err)
	}
	get := MinIOGet(mc, "lake")
	srv := StartGlue(t)

	cat, err := catalog.Load(ctx, "glue", iceberg.Properties{
		"type":                      "glue",
		gluecat.Region:              "us-east-1",
		gluecat.Endpoint:            srv.Endpoint,
		gluecat.AccessKeyID:         "AKIDTEST",
		gluecat.SecretAccessKey:     "x",
		icebergio.S3Region:          exportertest.MinIORegion,
		icebergio.S3AccessKeyID:     ms.AccessKey,
		icebergio.S3SecretAccessKey: ms.SecretKey,
		icebergio.S3EndpointURL:     ms.Endpoint,
	})
	if err != nil {
		t.Fatal(err)
	}

	ns := table.Identifier{"lake"}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, ns, nil); !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Fatalf("CreateNamespace again: %v, want ErrNamespaceAlreadyExists", err)
	}
	for name, want := range map[string]bool{"lake": true, "nope": false} {
		if ok, err := cat.CheckNamespaceExists(ctx, table.Identifier{name}); err != nil || ok != want {
			t.Fatalf("CheckNamespaceExists(%s) = %v, %v; want %v", name, ok, err, want)
		}
	}

	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "subject", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "sequence", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 3, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
	id := table.Identifier{"lake", "events"}
	tbl, err := cat.CreateTable(ctx, id, schema, catalog.WithLocation("s3://lake/raw/lake/events"))
	if err != nil {
		t.Fatal(err)
	}
	created := srv.MetadataLocation("lake", "events")
	if !strings.HasPrefix(created, "s3://lake/raw/lake/events/metadata/") || created != tbl.MetadataLocation() {
		t.Fatalf("metadata location after CreateTable: %q in Glue, %q in the table", created, tbl.MetadataLocation())
	}
	if tr, err := ReadMetadata(created, get); err != nil || tr.Snapshots != 0 {
		t.Fatalf("the new table: %+v, %v; want no snapshots", tr, err)
	}

	// Append sequences from..from+2 of subject s in one hour, and commit.
	appendRows := func(tbl *table.Table, s string, from int64) (*table.Table, error) {
		sc := arrow.NewSchema([]arrow.Field{
			{Name: "subject", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "sequence", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "timestamp", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		hour := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
		for i := range int64(3) {
			b.Field(0).(*array.StringBuilder).Append(s)
			b.Field(1).(*array.Int64Builder).Append(from + i)
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(hour.Add(time.Duration(i) * time.Minute).UnixMicro()))
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		if err != nil {
			return nil, err
		}
		defer rdr.Release()
		txn := tbl.NewTransaction()
		if err := txn.Append(ctx, rdr, nil); err != nil {
			return nil, err
		}
		return txn.Commit(ctx)
	}
	if _, err := appendRows(tbl, "a", 1); err != nil {
		t.Fatal(err)
	}
	tbl, err = cat.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	first := srv.MetadataLocation("lake", "events")
	if first == created || first != tbl.MetadataLocation() || tbl.CurrentSnapshot() == nil {
		t.Fatalf("after the commit: Glue has %q (was %q), the table %q, snapshot %v", first, created, tbl.MetadataLocation(), tbl.CurrentSnapshot())
	}
	gt, err := glueClient(srv).GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String("lake"), Name: aws.String("events")})
	if err != nil {
		t.Fatal(err)
	}
	if p := gt.Table.Parameters; p["table_type"] != "ICEBERG" || p["previous_metadata_location"] != created || aws.ToString(gt.Table.VersionId) != "2" {
		t.Errorf("Glue table after the commit: version %s, parameters %v", aws.ToString(gt.Table.VersionId), p)
	}
	tr, err := ReadMetadata(first, get)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Snapshots != 1 || len(tr.Files) != 1 {
		t.Errorf("the reader finds %d snapshots and %d files, want 1 and 1", tr.Snapshots, len(tr.Files))
	}
	for _, p := range tr.Check(3) {
		t.Error(p)
	}

	// A concurrent modification fails the commit: iceberg-go does not
	// retry by default (commit.retry.num-retries is 0).
	srv.FailUpdates(1)
	if _, err := appendRows(tbl, "b", 4); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("commit after FailUpdates(1): %v, want ErrCommitFailed", err)
	}
	if loc := srv.MetadataLocation("lake", "events"); loc != first {
		t.Fatalf("a failed commit moved the metadata location from %q to %q", first, loc)
	}
	// With retries on, the commit reloads the table and succeeds.
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: "2", table.CommitMinRetryWaitMsKey: "10"}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	srv.FailUpdates(1)
	if tbl, err = appendRows(tbl, "b", 4); err != nil {
		t.Fatalf("commit with retries after FailUpdates(1): %v", err)
	}
	srv.mu.Lock()
	left := srv.failUpdates
	srv.mu.Unlock()
	if left != 0 {
		t.Error("the commit with retries made no UpdateTable call")
	}
	if loc := srv.MetadataLocation("lake", "events"); loc != tbl.MetadataLocation() {
		t.Errorf("Glue has %q, the committed table %q", loc, tbl.MetadataLocation())
	}
	tr, err = ReadMetadata(srv.MetadataLocation("lake", "events"), get)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Snapshots != 2 || len(tr.Files) != 2 {
		t.Errorf("the reader finds %d snapshots and %d files, want 2 and 2", tr.Snapshots, len(tr.Files))
	}
	for _, p := range tr.Check(6) {
		t.Error(p)
	}

	if _, err := cat.LoadTable(ctx, table.Identifier{"lake", "nope"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("LoadTable of a missing table: %v, want ErrNoSuchTable", err)
	}
	var names []string
	for tid, err := range cat.ListTables(ctx, ns) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.Join(tid, "."))
	}
	if !slices.Equal(names, []string{"lake.events"}) {
		t.Errorf("ListTables = %v, want [lake.events]", names)
	}
	if err := cat.DropNamespace(ctx, ns); !errors.Is(err, catalog.ErrNamespaceNotEmpty) {
		t.Errorf("DropNamespace of a namespace with a table: %v, want ErrNamespaceNotEmpty", err)
	}
	if err := cat.DropTable(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ok, err := cat.CheckTableExists(ctx, id); err != nil || ok {
		t.Errorf("CheckTableExists after DropTable = %v, %v", ok, err)
	}
	if err := cat.DropNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if keys := srv.AccessKeys(); !slices.Contains(keys, "AKIDTEST") {
		t.Errorf("AccessKeys = %v, want AKIDTEST among them", keys)
	}
}
