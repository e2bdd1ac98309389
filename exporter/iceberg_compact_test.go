package exporter_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/internal/objstore"
)

// 2,000 small data files over 20 closed partitions are merged into one file
// a partition, rows sorted by sequence: the independent reader finds every
// sequence once, in a hundredth of the files, and verify agrees. A dry run
// changes nothing; compacting again finds nothing to do.
func TestCompactionMergesTheSmallFilesOfClosedPartitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	c := e.connector()
	const n, subjects = 10000, 20
	e.publish(n, subjects)
	e.runUntilIdle(c, 5*time.Minute)
	before := e.readTable(c, catalog)
	if len(before.Files) != n/5 {
		t.Fatalf("%d data files before compaction, want %d", len(before.Files), n/5)
	}
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The partitions are of this hour: open now, closed three hours on.
	if rep, err := lake.Compact(ctx, c, e.js, store, lake.CompactOptions{}); err != nil || len(rep.Groups) != 0 {
		t.Fatalf("compaction of open partitions: %v, %v", rep, err)
	}
	// Each group's replace is a snapshot: keep_snapshots holds after
	// compaction as after data commits.
	body, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.file, append(body, "keep_snapshots = 3\nsnapshot_retention = \"0s\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	c = e.connector()
	later := time.Now().Add(3 * time.Hour)
	dry, err := lake.Compact(ctx, c, e.js, store, lake.CompactOptions{DryRun: true, Now: later})
	if err != nil || len(dry.Groups) != subjects {
		t.Fatalf("dry run: %v, %v; want %d groups", dry, err, subjects)
	}
	if tr := e.readTable(c, catalog); len(tr.Files) != n/5 || tr.Snapshots != before.Snapshots {
		t.Fatalf("the dry run changed the table: %d files in %d snapshots", len(tr.Files), tr.Snapshots)
	}
	rep, err := lake.Compact(ctx, c, e.js, store, lake.CompactOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Groups {
		if r.Compacted == "" || len(r.Group.Files) != n/5/subjects {
			t.Fatalf("group %s of %d files: compacted %q, skipped %q", r.Group.Partition, len(r.Group.Files), r.Compacted, r.Skipped)
		}
	}
	after := e.readTable(c, catalog)
	if problems := after.Check(n); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	if after.Snapshots > 3 || rep.Expired == 0 || rep.ExpireErr != nil {
		t.Fatalf("%d snapshots after compacting %d groups with keep_snapshots = 3 (%d expired, %v)", after.Snapshots, subjects, rep.Expired, rep.ExpireErr)
	}
	if len(after.Files) != subjects || len(before.Files)/len(after.Files) < 10 {
		t.Fatalf("%d files after compaction, %d before", len(after.Files), len(before.Files))
	}
	for _, f := range after.Files {
		for i := 1; i < len(f.Seqs); i++ {
			if f.Seqs[i] <= f.Seqs[i-1] {
				t.Fatalf("%s: rows not sorted by sequence: %d after %d", f.Path, f.Seqs[i], f.Seqs[i-1])
			}
		}
	}
	// Arrow, through iceberg-go's scan, reads the compacted files too.
	at := e.scanTable(c, catalog, "sequence", "subject")
	if rows := at.NumRows(); rows != n {
		t.Fatalf("Arrow read %d rows, want %d", rows, n)
	}
	at.Release()
	e.verify(c)
	if again, err := lake.Compact(ctx, c, e.js, store, lake.CompactOptions{Now: later}); err != nil || len(again.Groups) != 0 || len(again.Orphans) != 0 {
		t.Fatalf("compacting again: %v, %v", again, err)
	}

}

// Inside run, compaction passes come every half compact_after, with or
// without new data, and the upkeep gauges say what is left.
func TestRunCompactsClosedPartitionsAndReportsUpkeep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	catalog := e.icebergConnector("1s")
	// The export runs with the default compact_after, so that none of its
	// files is compacted before plan is asked.
	e.publish(200, 2)
	e.runUntilIdle(e.connector(), time.Minute)
	body, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.file, append(body, "compact_after = \"2s\"\nkeep_snapshots = 2\nsnapshot_retention = \"0s\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.connector()
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	// plan tells of the upkeep due once the partitions close.
	time.Sleep(2500 * time.Millisecond)
	msg, err := iceberg.CheckConnector(context.Background(), c)
	if err != nil || !strings.Contains(msg, "of its 40 data files are small files of closed partitions") {
		t.Fatalf("plan's check of the table: %q, %v", msg, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, _ := e.run(ctx, c, false)
	exportertest.WaitFor(t, time.Minute, "the small files to be compacted", func() bool {
		return metricValue(reg, "jetlake_iceberg_compacted_files_total") >= 40
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tr := e.readTable(c, catalog)
	if problems := tr.Check(200); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	if len(tr.Files) >= 40 {
		t.Fatalf("%d data files left of 40", len(tr.Files))
	}
	if tr.Snapshots > 2 {
		t.Errorf("%d snapshots after compaction inside run with keep_snapshots = 2", tr.Snapshots)
	}
	if n := gauge(t, reg, "jetlake_iceberg_table_data_files"); n < 1 || n > float64(len(tr.Files)) {
		t.Errorf("jetlake_iceberg_table_data_files = %v with %d files in the table", n, len(tr.Files))
	}
	if n := gauge(t, reg, "jetlake_iceberg_metadata_bytes"); n < 1000 {
		t.Errorf("jetlake_iceberg_metadata_bytes = %v", n)
	}
	e.wantAllAcked()
	e.verify(c)
}

// metricValue returns the value of the single series of a counter or
// gauge, or 0.
func metricValue(reg prometheus.Gatherer, name string) float64 {
	families, err := reg.Gather()
	if err != nil {
		return 0
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			m := f.GetMetric()[0]
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// An unpartitioned table (partitioning = []) is one partition: its small
// files are merged into one under the data folder itself. Before, the
// compacted file's key held a "./" segment (data/./<range>.parquet), which
// MinIO refuses, and every compaction of such a table failed.
func TestCompactionMergesTheSmallFilesOfAnUnpartitionedTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	body, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.file, append(body, "partitioning = []\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.connector()
	const n = 200
	e.publish(n, 4)
	e.runUntilIdle(c, 2*time.Minute)
	if before := e.readTable(c, catalog); len(before.Files) != n/5 {
		t.Fatalf("%d data files before compaction, want %d", len(before.Files), n/5)
	}
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := lake.Compact(context.Background(), c, e.js, store, lake.CompactOptions{Now: time.Now().Add(3 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 1 || rep.Groups[0].Compacted == "" {
		t.Fatalf("compaction: %+v; want one group compacted", rep.Groups)
	}
	after := e.readTable(c, catalog)
	if len(after.Files) != 1 || len(after.Files[0].Seqs) != n {
		t.Fatalf("after compaction: %d files, want one of %d rows", len(after.Files), n)
	}
	for i, q := range after.Files[0].Seqs {
		if q != uint64(i+1) {
			t.Fatalf("row %d holds sequence %d", i, q)
		}
	}
	if strings.Contains(after.Files[0].Path, "/./") {
		t.Fatalf("after compaction: %d files, first %s", len(after.Files), after.Files[0].Path)
	}
	e.verify(c)
}
