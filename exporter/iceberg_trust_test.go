package exporter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/pathtemplate"
)

// What jetlake reads back is input, not truth: a publisher's subject and
// a record in the state bucket alike.

// One message with a subject of 1,000 bytes, mostly non-ASCII, goes into
// the table like any other: its data file lies in a partition folder cut
// to 128 bytes, the manifest holds its whole subject (a scan filtering on
// it finds it), and the run goes idle with every sequence in the table.
// Before partition values were cut, its key was over S3's 1,024 bytes, and
// the batch failed at every ack_wait for ever.
func TestALongSubjectGoesIntoItsIcebergPartitionAndStallsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	c := e.connector()
	long := e.stream + ".long."
	for len(long) < 999 {
		long += "é"
	}
	long += strings.Repeat("x", 1000-len(long))
	last := e.publishEach(41, func(i int) (string, []byte) {
		if i == 20 {
			return long, []byte(`{"i": 20}`)
		}
		return fmt.Sprintf("%s.s%d", e.stream, i%2), fmt.Appendf(nil, `{"i": %d}`, i)
	})
	e.runUntilIdle(c, 2*time.Minute)
	tr := e.readTable(c, catalog)
	if problems := tr.Check(last); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	var longFile string
	for _, f := range tr.Files {
		if f.Subjects[long] {
			longFile = f.Path
		}
	}
	if longFile == "" {
		t.Fatal("no data file holds the long subject")
	}
	seg := longFile[strings.Index(longFile, "/subject=")+len("/subject="):]
	seg = seg[:strings.IndexByte(seg, '/')]
	if len(seg) > pathtemplate.MaxValueLen || len(longFile) > pathtemplate.MaxKeyLen {
		t.Fatalf("the long subject's file %s: a folder value of %d bytes", longFile, len(seg))
	}
	e.wantAllAcked()
	e.verify(c)

	// Readers take the partition from the manifest: it holds the whole
	// subject, not the folder's cut one.
	tbl := e.loadTable(c, catalog)
	tasks, err := tbl.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("subject"), long))).PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].File.FilePath() != longFile {
		t.Fatalf("a scan for the long subject plans %d files, want %s", len(tasks), longFile)
	}
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		if f.Name == "subject" {
			if v := tasks[0].File.Partition()[f.FieldID]; v != long {
				t.Fatalf("the manifest's subject of %s is %.40q..., not the message's", longFile, v)
			}
		}
	}
}

// loadTable loads the connector's table through iceberg-go.
func (e *env) loadTable(c *config.Connector, catalog string) *table.Table {
	e.t.Helper()
	cat, err := sqlcat.NewCatalog(c.Name, openSQLite(e.t, catalog), sqlcat.SQLite, iceberg.Properties{
		iceio.S3Region: exportertest.MinIORegion, iceio.S3AccessKeyID: e.minio.AccessKey,
		iceio.S3SecretAccessKey: e.minio.SecretKey, iceio.S3EndpointURL: e.minio.Endpoint,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"lake", "events"})
	if err != nil {
		e.t.Fatal(err)
	}
	return tbl
}

// A commit plan written into the state bucket by someone else is refused
// on start, whatever it names: a copy of a data file outside [s3] prefix,
// in another bucket, reached through "..", in the data folder of a table
// whose name starts the same, or in the table's own data folder but with
// no intent naming it. The connector stops with a permanent error naming
// the plan's key and the file, and the table gains nothing. Once the key
// is deleted, the connector runs again. (A plan naming
// s3://<bucket>/hr/salaries.parquet was committed; one naming another
// bucket was retried for ever as "iceberg catalog unavailable".)
func TestAForgedCommitPlanIsRefusedAndCommitsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	c := e.connector()
	e.publish(100, 2)
	e.runUntilIdle(c, 2*time.Minute)
	before := e.readTable(c, catalog)
	if len(before.Files) == 0 {
		t.Fatal("no data files")
	}
	ctx := context.Background()
	// A true parquet data file of the table, copied elsewhere: iceberg-go
	// would read it without complaint.
	body := e.get(ctx, strings.TrimPrefix(before.Files[0].Path, "s3://"+e.bucket+"/"))
	other := e.bucket + "-other"
	if err := e.minio.CreateBucket(ctx, other); err != nil {
		t.Fatal(err)
	}
	put := func(bucket, key string) string {
		if _, err := e.mc.PutObject(ctx, bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		return "s3://" + bucket + "/" + key
	}
	kv, err := e.js.KeyValue(ctx, config.DefaultStateBucket)
	if err != nil {
		t.Fatal(err)
	}
	conn := base64.RawURLEncoding.EncodeToString([]byte(c.Name))
	for i, tc := range []struct {
		name, location, why string
	}{
		{"outside the prefix", put(e.bucket, "hr/salaries.parquet"), "not under the table's data folder"},
		{"in another bucket", put(other, "raw/lake/events/data/00000000000000000001-00000000000000000001.parquet"), "not under the table's data folder"},
		{"through ..", "s3://" + e.bucket + "/raw/lake/events/data/../../../" + strings.TrimPrefix(put(e.bucket, "hr/salaries.parquet"), "s3://"+e.bucket+"/"), "not under the table's data folder"},
		{"in the data folder of another table", put(e.bucket, "raw/lake/events2/data/00000000000000000001-00000000000000000001.parquet"), "not under the table's data folder"},
		{"in the table's data folder, with no intent", put(e.bucket, "raw/lake/events/data/forged/00000000000000000001-00000000000000000001.parquet"), "the state bucket holds no intent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("forged%d", i)
			key := "iceberg." + conn + ".lake.events.plan." + id
			plan, err := json.Marshal(map[string]any{
				"id": id, "table": "lake.events", "created": time.Now().UTC(),
				"files": []map[string]any{{"location": tc.location, "intent": "intent." + conn + ".eA.eA." + id, "First": 1, "Last": 1}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kv.Create(ctx, key, plan); err != nil {
				t.Fatal(err)
			}
			err = e.runUntilIdleErr(c, time.Minute)
			switch {
			case err == nil:
				t.Fatalf("the forged plan %s was accepted", key)
			case !failure.IsPermanent(err):
				t.Fatalf("not a permanent error: %v", err)
			case !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), tc.location) || !strings.Contains(err.Error(), tc.why):
				t.Fatalf("the error does not name the key %s, the file %s and why (%s): %v", key, tc.location, tc.why, err)
			}
			t.Logf("refused: %v", err)
			after := e.readTable(c, catalog)
			if after.Snapshots != before.Snapshots || len(after.Files) != len(before.Files) {
				t.Fatalf("the table went from %d files in %d snapshots to %d in %d", len(before.Files), before.Snapshots, len(after.Files), after.Snapshots)
			}
			for _, f := range after.Files {
				if f.Path == tc.location {
					t.Fatalf("the table holds %s", f.Path)
				}
			}
			if err := kv.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Deleted, as the error says, the plan is gone for good.
	e.publish(10, 2)
	e.runUntilIdle(c, 2*time.Minute)
	if problems := e.readTable(c, catalog).Check(110); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	e.verify(c)
}
