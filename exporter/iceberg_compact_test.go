package exporter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/exporter"
)

// 2,000 small data files over 20 closed partitions are merged into one file
// a partition, rows sorted by sequence: the independent reader finds every
// sequence once, in a hundredth of the files, and verify agrees. A dry run
// changes nothing; compacting again finds nothing to do.
func TestCompactionMergesTheSmallFilesOfClosedPartitions(t *testing.T) {
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
	store, err := exporter.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The partitions are of this hour: open now, closed three hours on.
	if res, err := exporter.Compact(ctx, c, e.js, store, exporter.CompactOptions{}); err != nil || len(res) != 0 {
		t.Fatalf("compaction of open partitions: %d groups, %v", len(res), err)
	}
	later := time.Now().Add(3 * time.Hour)
	dry, err := exporter.Compact(ctx, c, e.js, store, exporter.CompactOptions{DryRun: true, Now: later})
	if err != nil || len(dry) != subjects {
		t.Fatalf("dry run: %d groups, %v; want %d", len(dry), err, subjects)
	}
	if tr := e.readTable(c, catalog); len(tr.Files) != n/5 || tr.Snapshots != before.Snapshots {
		t.Fatalf("the dry run changed the table: %d files in %d snapshots", len(tr.Files), tr.Snapshots)
	}
	res, err := exporter.Compact(ctx, c, e.js, store, exporter.CompactOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Compacted == "" || len(r.Group.Files) != n/5/subjects {
			t.Fatalf("group %s of %d files: compacted %q, skipped %q", r.Group.Partition, len(r.Group.Files), r.Compacted, r.Skipped)
		}
	}
	after := e.readTable(c, catalog)
	if problems := after.Check(n); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
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
	if again, err := exporter.Compact(ctx, c, e.js, store, exporter.CompactOptions{Now: later}); err != nil || len(again) != 0 {
		t.Fatalf("compacting again: %d groups, %v", len(again), err)
	}
}
