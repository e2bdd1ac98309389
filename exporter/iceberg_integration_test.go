package exporter_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
	"github.com/jetlake/jetlake/internal/metrics"
)

// icebergConnector turns the test's connector into one that writes an
// Iceberg table through an embedded sqlite catalog, and returns the
// catalog file.
func (e *env) icebergConnector(interval string) string {
	e.t.Helper()
	body, err := os.ReadFile(e.file)
	if err != nil {
		e.t.Fatal(err)
	}
	catalog := filepath.Join(e.t.TempDir(), "catalog.db")
	s := strings.Replace(string(body), `format = "json_lines"`, `format = "parquet"`, 1)
	s = strings.Replace(s, `path_template = "{stream}/{subject}/{date}/{hour}"`, "", 1)
	s += fmt.Sprintf("\n[iceberg]\nuri = %q\nnamespace = \"lake\"\ntable = \"events\"\ncommit_interval = %q\n", "sqlite://"+catalog, interval)
	if err := os.WriteFile(e.file, []byte(s), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return catalog
}

// readTable reads the connector's table as an independent reader.
func (e *env) readTable(c *config.Connector, catalog string) *icebergtest.Table {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+catalog)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	tr, err := icebergtest.Read(db, false, c.Name, "lake", "events", icebergtest.MinIOGet(e.mc, e.bucket))
	if err != nil {
		e.t.Fatal(err)
	}
	return tr
}

// A connector with [iceberg] writes a table: every sequence in exactly one
// data file of the current snapshot, each file of one subject and one hour,
// in few snapshots; the data files lie under the table's data folder, named
// by their partition and sequence range.
func TestAnIcebergConnectorWritesEverySequenceOnceIntoTheTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	c := e.connector()
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	e.publish(1000, 4)
	e.runUntilIdle(c, 2*time.Minute)
	tr := e.readTable(c, catalog)
	if problems := tr.Check(1000); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	// One commit at the end of the run, the interval being an hour.
	// 250 messages per subject, 100 per file: 3 files a subject.
	if tr.Snapshots != 1 || len(tr.Files) != 12 {
		t.Fatalf("%d files in %d snapshots, want 12 in 1", len(tr.Files), tr.Snapshots)
	}
	if n := gauge(t, reg, "jetlake_iceberg_table_snapshots"); n != 1 {
		t.Errorf("jetlake_iceberg_table_snapshots = %v, want 1", n)
	}
	if since := time.Since(time.Unix(int64(gauge(t, reg, "jetlake_iceberg_last_commit_timestamp_seconds")), 0)); since > time.Minute {
		t.Errorf("last commit %s ago", since)
	}
	for _, f := range tr.Files {
		if !strings.HasPrefix(f.Path, "s3://"+e.bucket+"/raw/lake/events/data/timestamp_hour=") || !strings.Contains(f.Path, "/subject="+e.stream) {
			t.Fatalf("data file %s is not under the table's partition folders", f.Path)
		}
	}
	e.wantAllAcked()
	// verify counts the table's files only: a data file under the table's
	// folder that no commit added is noted, not counted.
	ctx := context.Background()
	stray := "raw/lake/events/data/timestamp_hour=2026-12-01-07/subject=x/00000000000000000001-00000000000000000001.parquet"
	if _, err := e.mc.PutObject(ctx, e.bucket, stray, strings.NewReader("x"), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := e.verify(c)[0]
	notes := strings.Join(rep.Notes, "\n")
	if rep.Messages != 1000 || !strings.Contains(notes, "only the 12 data files of the Iceberg table lake.events's current snapshot count") ||
		!strings.Contains(notes, "1 data files under raw/lake/events/data/ are not in the current snapshot: stored and waiting for a commit") {
		t.Fatalf("verify: %d messages, notes:\n%s", rep.Messages, notes)
	}
	if err := e.mc.RemoveObject(ctx, e.bucket, stray, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}

	// A second run adds a snapshot with the new files only.
	e.publish(500, 4)
	e.runUntilIdle(c, 2*time.Minute)
	tr = e.readTable(c, catalog)
	if problems := tr.Check(1500); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	if tr.Snapshots != 2 {
		t.Fatalf("%d snapshots, want 2", tr.Snapshots)
	}
	e.wantAllAcked()
	e.verify(c)
	if n := e.stateKeys(context.Background()); n != 0 {
		t.Errorf("%d intents, plans and claims left in the state bucket after clean runs", n)
	}
}

// stateKeys returns how many intents, commit plans and claims of the test's
// connector the state bucket holds.
func (e *env) stateKeys(ctx context.Context) int {
	e.t.Helper()
	kv, err := e.js.KeyValue(ctx, config.DefaultStateBucket)
	if err != nil {
		e.t.Fatal(err)
	}
	name := base64.RawURLEncoding.EncodeToString([]byte("c" + e.stream))
	n := 0
	for _, prefix := range []string{"intent." + name + ".>", "iceberg." + name + ".>"} {
		lister, err := kv.ListKeysFiltered(ctx, prefix)
		if err != nil {
			e.t.Fatal(err)
		}
		for range lister.Keys() {
			n++
		}
	}
	return n
}

// A typed column added to the connector file between two runs is added to
// the table on the second start; Arrow (iceberg-go's scan) reads the rows
// of both runs together, the first run's with the new column null.
func TestAColumnAddedToTheConnectorIsAddedToTheTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	e.publish(200, 2)
	e.runUntilIdle(e.connector(), 2*time.Minute)

	body, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	body = []byte(strings.Replace(string(body), "\n[iceberg]\n", "\n[[output.columns]]\nname = \"user_id\"\nsource = \"user.id\"\ntype = \"int64\"\n\n[iceberg]\n", 1))
	if err := os.WriteFile(e.file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.connector()
	e.publish(200, 2)
	e.runUntilIdle(c, 2*time.Minute)
	tr := e.readTable(c, catalog)
	if problems := tr.Check(400); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}

	at := e.scanTable(c, catalog, "sequence", "user_id")
	defer at.Release()
	rows := 0
	tr2 := array.NewTableReader(at, 0)
	defer tr2.Release()
	for tr2.Next() {
		rec := tr2.RecordBatch()
		seq, user := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
		for i := range int(rec.NumRows()) {
			rows++
			q := seq.Value(i)
			// Message i (sequence i+1) has user.id i%97.
			switch {
			case q <= 200 && !user.IsNull(i):
				t.Fatalf("sequence %d, written before the column was added, has user_id %d", q, user.Value(i))
			case q > 200 && (user.IsNull(i) || user.Value(i) != (q-201)%97):
				t.Fatalf("sequence %d: user_id %v, want %d", q, user.Value(i), (q-201)%97)
			}
		}
	}
	if rows != 400 {
		t.Fatalf("%d rows, want 400", rows)
	}
}

// scanTable reads columns of the connector's table with Arrow, through
// iceberg-go's scan: another reader than the independent one.
func (e *env) scanTable(c *config.Connector, catalog string, columns ...string) arrow.Table {
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
	at, err := tbl.Scan(table.WithSelectedFields(columns...)).ToArrowTable(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return at
}

func openSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// After a commit, snapshots beyond keep_snapshots older than
// snapshot_retention are expired; the table keeps every sequence once.
func TestOldSnapshotsAreExpiredAfterCommits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	body, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.file, append(body, "keep_snapshots = 2\nsnapshot_retention = \"0s\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.connector()
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	for range 4 {
		e.publish(100, 2)
		e.runUntilIdle(c, 2*time.Minute) // one commit each
	}
	tr := e.readTable(c, catalog)
	if problems := tr.Check(400); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	if tr.Snapshots != 2 {
		t.Fatalf("%d snapshots after 4 commits, want the 2 kept", tr.Snapshots)
	}
	if n := counter(t, reg, "jetlake_iceberg_snapshots_expired_total"); n != 2 {
		t.Fatalf("jetlake_iceberg_snapshots_expired_total = %v, want 2", n)
	}
	e.verify(c)
}

// More data files than one commit plan can name are committed in several
// plans: a plan is one value in the state bucket, which the server bounds
// by its max_payload. (A server with 16 KiB of max_payload makes 400 files
// too many for one; before plans were bounded the commit failed for ever
// with "maximum payload exceeded".)
func TestMoreFilesThanOnePlanHoldsAreCommittedInSeveral(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("max_payload: 16384\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := exportertest.NATS(t, exportertest.NATSOptions{Args: []string{"-c", conf}})
	e := newEnv(t, ns, shared.MinIO(t), `
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	c := e.connector()
	e.publish(400, 400)
	e.runUntilIdle(c, 3*time.Minute)
	tr := e.readTable(c, catalog)
	if problems := tr.Check(400); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	if len(tr.Files) != 400 || tr.Snapshots < 2 {
		t.Fatalf("%d files in %d snapshots, want 400 in several", len(tr.Files), tr.Snapshots)
	}
	t.Logf("400 files in %d snapshots", tr.Snapshots)
	e.wantAllAcked()
	e.verify(c)
	if n := e.stateKeys(context.Background()); n != 0 {
		t.Errorf("%d intents, plans and claims left in the state bucket", n)
	}
}
