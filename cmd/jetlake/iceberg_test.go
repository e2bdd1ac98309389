package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/fault"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
	"github.com/jetlake/jetlake/internal/statekey"
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
	return len(c.stateKeyList(filter))
}

// stateKeyList returns the keys of the test's connector in the state
// bucket that match filter, a filter of every connector's keys such as
// "intent.>": the tests share the state bucket and run in parallel, and
// the connector is the second token of each key.
func (c *crashEnv) stateKeyList(filter string) []string {
	c.t.Helper()
	kv, err := c.js.KeyValue(context.Background(), config.DefaultStateBucket)
	if err != nil {
		return nil
	}
	family, rest, _ := strings.Cut(filter, ".")
	if rest != ">" {
		_, rest, _ = strings.Cut(rest, ".")
	}
	lister, err := kv.ListKeysFiltered(context.Background(), family+"."+statekey.Token(c.name)+"."+rest)
	if err != nil {
		c.t.Fatal(err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	return keys
}

// Kill jetlake with SIGKILL at each step of the way into an Iceberg table,
// restart it, and every sequence is in exactly one data file of the table:
// after a data file is stored, after it is recorded for commit and acked,
// once its commit is planned, after the commit before the bookkeeping, and
// while recovery commits a plan; with a sqlite and a PostgreSQL catalog.
func TestIcebergCrashAtEveryCommitStepLandsEachSequenceOnce(t *testing.T) {
	t.Parallel()
	for _, catalogKind := range []string{"sqlite", "postgres"} {
		t.Run(catalogKind, func(t *testing.T) {
			t.Parallel()
			icebergCrashes(t, catalogKind == "postgres")
		})
	}
}

func icebergCrashes(t *testing.T, postgres bool) {
	for _, point := range []string{"after-upload", "after-confirm", "before-table-commit", "after-table-commit", "during-table-recovery"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
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
				cmd, stderr := c.start(fault.Env + "=before-table-commit:1")
				waitKilled(t, cmd, stderr)
				if c.stateKeys("iceberg.>") == 0 {
					t.Fatal("no commit plan was left to recover")
				}
				hit = ":1"
			}
			cmd, stderr := c.start(fault.Env + "=" + point + hit)
			waitKilled(t, cmd, stderr)
			c.runUntilIdle()
			c.cleanTable(catalog, n)
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
	// Sample keys are the table's data files, in its partition folders.
	sample := "s3://plan/raw/lake/events/data/timestamp_hour=" + time.Now().UTC().Format("2006-01-02-15") + "/subject="
	if !strings.Contains(out, "sample data file keys of the Iceberg table") || !strings.Contains(out, sample) {
		t.Fatalf("no sample data file key like %s:\n%s", sample, out)
	}
	// What a restore of the table gives back.
	restore := "note  restore from the Iceberg table's parquet data files: messages come back with subjects; JSON payloads come back compacted (as the parquet payload column holds them), other payloads byte for byte; headers are not kept (include_headers = false)"
	if !strings.Contains(out, restore) {
		t.Fatalf("no %q:\n%s", restore, out)
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
	want = "the table is partitioned by [day(timestamp)], the connector by [hour(timestamp), identity(subject)]: jetlake does not change a table's partitioning; set [iceberg] partitioning = [\"day(timestamp)\"], or give [iceberg] table a new name"
	if code != 1 || !strings.Contains(out, "FAIL  iceberg table lake.events") || !strings.Contains(out, want) {
		t.Fatalf("exit %d, want 1 and %q:\n%s%s", code, want, out, errOut)
	}
}

// viaLink writes a copy of the connector file that reaches NATS through a
// link the test can freeze, and returns the copy and the link.
func (c *crashEnv) viaLink() (string, *exportertest.Link) {
	c.t.Helper()
	link := exportertest.NewLink(c.t, strings.TrimPrefix(c.nats.URL, "nats://"))
	body, err := os.ReadFile(c.file)
	if err != nil {
		c.t.Fatal(err)
	}
	body = bytes.Replace(body, []byte(c.nats.URL), []byte("nats://"+link.Addr), 1)
	return writeFile(c.t, c.name+"-link.toml", string(body)), link
}

// cleanTable checks what every Iceberg test ends with: sequences 1..n each
// in exactly one data file of the table, fewer snapshots than files (unless
// compaction merged the files), verify content, and no intents, plans or
// claims left.
func (c *crashEnv) cleanTable(catalog string, n uint64) {
	c.t.Helper()
	tr := c.table(catalog, n)
	compacted := slices.ContainsFunc(tr.Files, func(f icebergtest.File) bool { return strings.Contains(path.Base(f.Path), "-c") })
	if len(tr.Files) < tr.Snapshots && !compacted {
		c.t.Errorf("%d snapshots for %d files", tr.Snapshots, len(tr.Files))
	}
	if out := c.verify(); !strings.Contains(out, "OK: every sequence") {
		c.t.Fatalf("verify:\n%s", out)
	}
	kv, _ := c.js.KeyValue(context.Background(), config.DefaultStateBucket)
	// A plan a recovery abandoned (its process died between claiming its
	// files and recording it) keeps its mark, without files, for a day.
	abandoned := func(key string) bool {
		e, err := kv.Get(context.Background(), key)
		var p iceberg.Plan
		return err == nil && json.Unmarshal(e.Value(), &p) == nil && !p.Abandoned.IsZero() && len(p.Files) == 0
	}
	left := slices.DeleteFunc(append(c.stateKeyList("intent.>"), c.stateKeyList("iceberg.>")...), abandoned)
	if len(left) != 0 {
		var values []string
		for _, k := range append(left[:min(3, len(left))], c.stateKeyList("export.>")...) {
			e, err := kv.Get(context.Background(), k)
			if err != nil {
				values = append(values, k+": "+err.Error())
				continue
			}
			values = append(values, k+" = "+string(e.Value()))
		}
		c.t.Fatalf("%d intents, plans and claims left after a clean run:\n%s", len(left), strings.Join(values, "\n"))
	}
}

// Kill jetlake at random moments while messages are published and the
// table is committed every second, some kills after its NATS link froze;
// the table ends with every sequence exactly once.
func TestIcebergChaosKillsAndFrozenLinksLoseAndDoubleNothing(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "icechaos", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	catalog := c.iceberg(false)
	file, link := c.viaLink()
	const n = 30000
	published := c.publishInBackground(n, 20)
	rng := rand.New(rand.NewPCG(chaosSeed(t), 12))
	frozen := 0
	for kill := range 8 {
		cmd, _ := c.startFile(file)
		time.Sleep(time.Duration(300+rng.IntN(2500)) * time.Millisecond)
		if kill%2 == 1 {
			link.Freeze()
			frozen++
			time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		link.Thaw()
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	c.runUntilIdle()
	c.cleanTable(catalog, n)
	t.Logf("8 kills, %d of them with the NATS link frozen", frozen)
}

// Two instances share one table with pinned failover. The active one's NATS
// link freezes mid-run, the standby takes over and commits, then the link
// thaws and the old instance wakes up: no commit is lost or doubled.
func TestIcebergTwoInstancesOnOneTableNeverLoseOrDoubleACommit(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "icepair", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	c.pinned()
	catalog := c.iceberg(false)
	file, link := c.viaLink()
	const n = 20000
	first := c.publishInBackground(n/2, 10)
	a, aLog := c.startFile(file)
	exportertest.WaitFor(t, 30*time.Second, "the first instance to become active", func() bool {
		return strings.Contains(aLog.String(), "this instance is active")
	})
	b, bLog := c.start()
	time.Sleep(2500 * time.Millisecond)
	link.Freeze()
	// The other half comes while the active instance is cut off: someone
	// must take it.
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	published := c.publishInBackground(n/2, 10)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(bLog.String(), "this instance is active") {
		if time.Now().After(deadline) {
			t.Fatalf("the standby did not take over within a minute of the active instance's link freezing\nactive:\n%s\nstandby:\n%s", aLog, bLog)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	link.Thaw()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	c.consumerDone(c.name, n, 2*time.Minute, aLog, bLog)
	for _, cmd := range []*exec.Cmd{a, b} {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range []*exec.Cmd{a, b} {
		if err := cmd.Wait(); err != nil {
			t.Logf("instance %d exit: %v\n%s", i, err, []*bytes.Buffer{aLog, bLog}[i])
		}
	}
	// Under pinned failover only the active instance recovers: a few more
	// messages make the next run active, and it tidies what the two left.
	c.publish(100, 10)
	c.runUntilIdle()
	c.cleanTable(catalog, n+100)
}

// Snapshot expiry that keeps only the newest snapshot, run by another tool
// between a crash right after a commit and the restart: the restart
// commits nothing again.
func TestIcebergExpiryBetweenACrashAndTheRestartKeepsExactlyOnce(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "iceexpire", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	catalog := c.iceberg(false)
	const n = 6000
	cmd, stderr := c.start(fault.Env + "=after-table-commit:3")
	// Bursts further apart than the commit interval: a commit each.
	for range 5 {
		c.publish(n/5, 4)
		time.Sleep(1500 * time.Millisecond)
	}
	waitKilled(t, cmd, stderr)
	// Plans whose commits were marked done may be kept still (their
	// intents not yet forgotten): recovery must not commit them again
	// (TestRecoveryIsExactlyOnceAfterSnapshotExpiry makes sure of it). The
	// commit the process died in is not marked: recovery finds it in the
	// newest snapshot, which expiry keeps.
	done := c.stateKeys("iceberg.*.*.*.done.*")
	ms := shared.MinIO(t)
	tbl, err := iceberg.Load(context.Background(), iceberg.Config{
		Catalog: c.name, URI: catalog, Namespace: "lake", Table: "events", Warehouse: "s3://" + c.name + "/lake",
		S3: iceberg.S3{Endpoint: ms.Endpoint, Region: exportertest.MinIORegion, AccessKeyID: ms.AccessKey, SecretAccessKey: ms.SecretKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	removed, err := tbl.ExpireSnapshots(context.Background(), 1, 0)
	tbl.Close()
	if err != nil || removed < 2 {
		t.Fatalf("expiry removed %d snapshots: %v", removed, err)
	}
	c.runUntilIdle()
	c.cleanTable(catalog, n)
	t.Logf("%d committed plans kept at the crash; expiry removed %d snapshots", done, removed)
}

// Compaction runs inside jetlake run, on the instance that commits, while
// data commits go on; jetlake is killed with SIGKILL at random moments. The
// table ends with every sequence exactly once, and compacted files in it.
func TestIcebergCompactionUnderKillsLosesAndDoublesNothing(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "icecompact", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	catalog := c.iceberg(false)
	body, err := os.ReadFile(c.file)
	if err != nil {
		t.Fatal(err)
	}
	body = bytes.Replace(body, []byte("max_messages_per_file = 300\n"), []byte("max_messages_per_file = 20\n"), 1)
	body = bytes.Replace(body, []byte("commit_interval = \"1s\"\n"), []byte("commit_interval = \"1s\"\ncompact_after = \"1s\"\n"), 1)
	if err := os.WriteFile(c.file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	const batch = 2000
	n := uint64(0) // published
	rng := rand.New(rand.NewPCG(chaosSeed(t), 13))
	passes := 0 // compactions the killed runs logged
	for range 6 {
		cmd, stderr := c.start()
		c.publish(batch, 8)
		n += batch
		// Long enough, most of the time, for a partition to close and a
		// pass to merge it while commits go on.
		time.Sleep(time.Duration(3000+rng.IntN(3000)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		passes += strings.Count(stderr.String(), "iceberg files compacted")
	}
	if passes == 0 {
		// On a busy machine no run lived long enough to compact: one
		// more is killed once it has, while commits go on.
		t.Log("no killed run compacted; one more is killed after a compaction")
		var log logBuffer
		cmd := c.startTo(c.file, &log)
		c.publish(batch, 8)
		n += batch
		exportertest.WaitFor(t, 2*time.Minute, "a compaction", func() bool {
			return strings.Contains(log.String(), "iceberg files compacted")
		})
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		passes += strings.Count(log.String(), "iceberg files compacted")
	}
	if passes == 0 {
		t.Fatal("no compaction ran while the killed instances committed")
	}
	// Partitions close a second after their newest row: one more run
	// compacts what is left.
	time.Sleep(2 * time.Second)
	c.runUntilIdle()
	tr := c.table(catalog, n)
	compacted := 0
	for _, f := range tr.Files {
		if strings.Contains(path.Base(f.Path), "-c") {
			compacted++
		}
	}
	if compacted == 0 {
		t.Fatalf("no compacted file among the table's %d files", len(tr.Files))
	}
	c.cleanTable(catalog, n)
	t.Logf("%d compactions in the killed runs; %d data files in the table at the end, %d of them compacted", passes, len(tr.Files), compacted)
}
