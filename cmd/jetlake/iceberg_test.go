package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/exportertest"
	"github.com/jetlake/jetlake/exporter/iceberg"
	"github.com/jetlake/jetlake/exporter/iceberg/icebergtest"
	"github.com/jetlake/jetlake/formats"
)

// iceberg makes the connector write an Iceberg table, committing every
// second, through an embedded sqlite catalog or, with postgres, a
// PostgreSQL server of its own, and returns the catalog's URI.
func (c *crashEnv) iceberg(postgres bool) string {
	c.t.Helper()
	uri := "sqlite://" + filepath.Join(c.t.TempDir(), "catalog.db")
	if postgres {
		uri = exportertest.Postgres(c.t, exportertest.PostgresOptions{}).URL
	}
	body, err := os.ReadFile(c.file)
	if err != nil {
		c.t.Fatal(err)
	}
	body = append(body, []byte("[output]\nformat = \"parquet\"\n[iceberg]\nuri = \""+uri+"\"\nnamespace = \"lake\"\ntable = \"events\"\ncommit_interval = \"1s\"\n")...)
	if err := os.WriteFile(c.file, body, 0o644); err != nil {
		c.t.Fatal(err)
	}
	return uri
}

// table reads the connector's table as an independent reader and requires
// sequences 1..n each in exactly one data file of its current snapshot.
func (c *crashEnv) table(uri string, n uint64) *icebergtest.Table {
	c.t.Helper()
	driver, dsn, postgres := "sqlite", "file:"+strings.TrimPrefix(uri, "sqlite://"), false
	if strings.HasPrefix(uri, "postgres://") {
		driver, dsn, postgres = "pgx", uri, true
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		c.t.Fatal(err)
	}
	defer db.Close()
	tr, err := icebergtest.Read(db, postgres, c.name, "lake", "events", icebergtest.MinIOGet(c.mc, c.name))
	if err != nil {
		c.t.Fatal(err)
	}
	if problems := tr.Check(n); len(problems) > 0 {
		c.t.Fatalf("%d problems in the table, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	return tr
}

// stateKeys counts the keys of the state bucket that match filter.
func (c *crashEnv) stateKeys(filter string) int {
	c.t.Helper()
	kv, err := c.js.KeyValue(context.Background(), config.DefaultStateBucket)
	if err != nil {
		return 0
	}
	lister, err := kv.ListKeysFiltered(context.Background(), filter)
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for range lister.Keys() {
		n++
	}
	return n
}

// Kill jetlake with SIGKILL at each step of the way into an Iceberg table,
// restart it, and every sequence is in exactly one data file of the table:
// after a data file is stored, after it is recorded for commit and acked,
// once its commit is planned, after the commit before the bookkeeping, and
// while recovery commits a plan; with a sqlite and a PostgreSQL catalog.
func TestIcebergCrashAtEveryCommitStepLandsEachSequenceOnce(t *testing.T) {
	for _, catalogKind := range []string{"sqlite", "postgres"} {
		t.Run(catalogKind, func(t *testing.T) { icebergCrashes(t, catalogKind == "postgres") })
	}
}

func icebergCrashes(t *testing.T, postgres bool) {
	for _, point := range []string{"after-upload", "after-confirm", "before-table-commit", "after-table-commit", "during-table-recovery"} {
		t.Run(point, func(t *testing.T) {
			name := "ice-" + point
			if postgres {
				name = "pg-" + point
			}
			c := newCrashEnv(t, name, shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
			catalog := c.iceberg(postgres)
			const n = 2000
			c.publish(n, 4)
			hit := ":2"
			if point == "during-table-recovery" {
				// Leave a plan behind, then crash while recovery commits it.
				cmd, stderr := c.start(exporter.FaultEnv + "=before-table-commit:1")
				waitKilled(t, cmd, stderr)
				if c.stateKeys("iceberg.>") == 0 {
					t.Fatal("no commit plan was left to recover")
				}
				hit = ":1"
			}
			cmd, stderr := c.start(exporter.FaultEnv + "=" + point + hit)
			waitKilled(t, cmd, stderr)
			c.runUntilIdle()
			tr := c.table(catalog, n)
			if len(tr.Files) < tr.Snapshots {
				t.Errorf("%d snapshots for %d files", tr.Snapshots, len(tr.Files))
			}
			if left := c.stateKeys("intent.>") + c.stateKeys("iceberg.>"); left != 0 {
				t.Fatalf("%d intents, plans and claims left after a clean run", left)
			}
		})
	}
}

// plan checks an Iceberg connector's catalog and table: one that does not
// exist yet is created on the first start; one that exists must fit.
func TestPlanChecksTheIcebergTable(t *testing.T) {
	createBucketOnce(t, "plan")
	createPlanStream(t, "PLANICE")
	catalog := filepath.Join(t.TempDir(), "catalog.db")
	ice := "[output]\nformat = \"parquet\"\n[iceberg]\nuri = \"sqlite://" + catalog + "\"\nnamespace = \"lake\"\ntable = \"events\"\n"
	path := writeFile(t, "ice.toml", strings.Replace(planFileBody(t, shared.NATS(t).URL, "PLANICE", "planice", "plan", ""), "[rotation]", ice+"[rotation]", 1))
	env := shared.MinIO(t).ClientEnv()
	code, out, errOut := jetlakeEnv(t, env, "plan", "-config", path)
	want := "ok    iceberg table lake.events (catalog sqlite://" + catalog + "): does not exist yet; jetlake creates it on first start at s3://plan/raw/lake/events"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, want 0 and %q:\n%s%s", code, want, out, errOut)
	}
	// A table partitioned otherwise is refused.
	ms := shared.MinIO(t)
	tbl, err := iceberg.Open(context.Background(), iceberg.Config{
		Catalog: "planice", URI: "sqlite://" + catalog, Namespace: "lake", Table: "events", Warehouse: "s3://plan/raw",
		S3:           iceberg.S3{Endpoint: ms.Endpoint, Region: exportertest.MinIORegion, AccessKeyID: ms.AccessKey, SecretAccessKey: ms.SecretKey},
		Partitioning: []config.Partition{{Column: "timestamp", Transform: "day"}},
	}, formats.Fields(formats.Options{Format: formats.Parquet}))
	if err != nil {
		t.Fatal(err)
	}
	tbl.Close()
	code, out, errOut = jetlakeEnv(t, env, "plan", "-config", path)
	want = "the table is partitioned by [day(timestamp)], the connector by [hour(timestamp), identity(subject)]"
	if code != 1 || !strings.Contains(out, "FAIL  iceberg table lake.events") || !strings.Contains(out, want) {
		t.Fatalf("exit %d, want 1 and %q:\n%s%s", code, want, out, errOut)
	}
}
