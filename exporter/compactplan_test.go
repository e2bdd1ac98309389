package exporter_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
)

// errReadOnly is what the read-only wrappers return on a write.
var errReadOnly = errors.New("read only")

// readOnlyState is a state bucket that fails the test on any write.
type readOnlyState struct {
	state.Store
	t *testing.T
}

func (s readOnlyState) Create(_ context.Context, key string, _ []byte) error {
	s.t.Errorf("state bucket: create %s", key)
	return errReadOnly
}

func (s readOnlyState) Delete(_ context.Context, key string) error {
	s.t.Errorf("state bucket: delete %s", key)
	return errReadOnly
}

func (s readOnlyState) Update(_ context.Context, key string, _ []byte, _ uint64) (uint64, error) {
	s.t.Errorf("state bucket: update %s", key)
	return 0, errReadOnly
}

// readOnlyStore is the S3 store that fails the test on any write.
type readOnlyStore struct {
	*objstore.S3Store
	t *testing.T
}

func (s readOnlyStore) Put(_ context.Context, key string, _ formats.Body, _ objstore.PutOptions) error {
	s.t.Errorf("store: put %s", key)
	return errReadOnly
}

func (s readOnlyStore) Delete(_ context.Context, key string) error {
	s.t.Errorf("store: delete %s", key)
	return errReadOnly
}

// openTable loads the connector's table and opens its state bucket, as
// Compact does.
func (e *env) openTable(c *config.Connector) (*iceberg.Table, state.Store) {
	e.t.Helper()
	ctx := context.Background()
	icfg, _, err := iceberg.ConnectorConfig(c)
	if err != nil {
		e.t.Fatal(err)
	}
	t, err := iceberg.Load(ctx, icfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { t.Close() })
	st, err := state.Open(ctx, e.js, c.State.Bucket, c.State.Replicas)
	if err != nil {
		e.t.Fatal(err)
	}
	return t, st
}

// Planning a compaction reads the table, the state bucket and the store and
// writes to none of them, orphans and all; applying the plan then does
// what it says. A compacted file of a planned group (a compaction that
// died before its swap) is no orphan while the plan may swap it in; once
// its group is gone, the next plan names it.
func TestPlanningACompactionWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	c := e.connector()
	last := e.publish(100, 2)
	e.runUntilIdle(c, time.Minute)
	ctx := context.Background()
	tbl, st := e.openTable(c)
	s3, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	ro := readOnlyStore{s3, t}
	later := time.Now().Add(73 * time.Hour)
	first, err := lake.PlanCompaction(ctx, c, tbl, readOnlyState{st, t}, ro, lake.PlanOptions{Now: later, Orphans: true})
	if err != nil || len(first.Groups) != 2 {
		t.Fatalf("plan: %+v, %v; want a group for each subject", first, err)
	}

	id := e.tableUUID(c)
	dir := "raw/lake/events/data/timestamp_hour=2026-12-01-07/subject=x/"
	orphan := dir + "00000000000000000001-00000000000000000001.parquet"
	swappable := dir + "00000000000000000002-00000000000000000002.parquet"
	foreign := dir + "00000000000000000003-00000000000000000003.parquet"
	for key, md := range map[string]map[string]string{
		orphan:    {objstore.MetaConnector: c.Name, objstore.MetaTable: id, objstore.MetaCompaction: "g"},
		swappable: {objstore.MetaConnector: c.Name, objstore.MetaTable: id, objstore.MetaCompaction: first.Groups[0].Group.ID()},
		foreign:   nil,
	} {
		if _, err := e.mc.PutObject(ctx, e.bucket, key, strings.NewReader("x"), 1, minio.PutObjectOptions{UserMetadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	before, keys := e.readTable(c, catalog), e.objectKeys("")
	plan, err := lake.PlanCompaction(ctx, c, tbl, readOnlyState{st, t}, ro, lake.PlanOptions{Now: later, Orphans: true})
	if err != nil {
		t.Fatal(err)
	}
	loc := "s3://" + e.bucket + "/"
	if !slices.Equal(plan.Orphans, []string{loc + orphan}) || !slices.Equal(plan.Foreign, []string{loc + foreign}) {
		t.Fatalf("orphans %v, foreign %v; want %s, then %s", plan.Orphans, plan.Foreign, orphan, foreign)
	}
	for _, g := range plan.Groups {
		if g.Skip != "" || g.Stream != e.stream || len(g.Group.Files) != 10 {
			t.Fatalf("group %+v: want 10 files of stream %s to compact", g, e.stream)
		}
	}
	if plan.Upkeep.DataFiles != 20 || plan.Upkeep.Compactable != 20 {
		t.Fatalf("upkeep as planned: %+v; want 20 data files, all compactable", plan.Upkeep)
	}
	after := e.readTable(c, catalog)
	if after.Snapshots != before.Snapshots || len(after.Files) != len(before.Files) || !slices.Equal(e.objectKeys(""), keys) {
		t.Fatalf("planning changed the table (%d files in %d snapshots, %d in %d before) or the bucket",
			len(after.Files), after.Snapshots, len(before.Files), before.Snapshots)
	}

	rep, err := plan.Apply(ctx, tbl, s3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Groups {
		if r.Compacted == "" {
			t.Fatalf("group %s: not compacted (%s)", r.Group.Partition, r.Skipped)
		}
	}
	if !slices.Equal(rep.Orphans, plan.Orphans) || rep.Upkeep == nil || rep.Upkeep.DataFiles != 2 {
		t.Fatalf("applied: orphans %v, upkeep %+v", rep.Orphans, rep.Upkeep)
	}
	for key, want := range map[string]bool{orphan: false, swappable: true, foreign: true} {
		_, err := e.mc.StatObject(ctx, e.bucket, key, minio.StatObjectOptions{})
		if (err == nil) != want {
			t.Errorf("%s: kept %v, want %v", key, err == nil, want)
		}
	}
	if tr := e.readTable(c, catalog); len(tr.Check(last)) > 0 || len(tr.Files) != 2 {
		t.Fatalf("after the plan: %d files, problems %v", len(tr.Files), tr.Check(last))
	}
	next, err := lake.PlanCompaction(ctx, c, tbl, readOnlyState{st, t}, ro, lake.PlanOptions{Now: later, Orphans: true})
	if err != nil || len(next.Groups) != 0 || !slices.Equal(next.Orphans, []string{loc + swappable}) {
		t.Fatalf("next plan: %+v, %v; want no group and the orphan %s", next, err, swappable)
	}
	e.verify(c)
}

// A plan applied after the table moved on does what today's table allows:
// a group whose files another compaction took meanwhile is left alone, and
// a group whose files are still there is swapped in around the data
// commits that landed since the plan, which stay.
func TestACompactionPlanAppliedAfterTheTableMovedOnSkipsOrRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	catalog := e.icebergConnector("1h")
	c := e.connector()
	e.publish(100, 2)
	e.runUntilIdle(c, time.Minute)
	ctx := context.Background()
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(3 * time.Hour)
	tbl, st := e.openTable(c)
	plan, err := lake.PlanCompaction(ctx, c, tbl, st, store, lake.PlanOptions{Now: later})
	if err != nil || len(plan.Groups) != 2 {
		t.Fatalf("plan: %+v, %v; want a group for each subject", plan, err)
	}

	// Another compaction, cutting smaller groups, takes half the files of
	// the first group.
	other := e.connector()
	other.Rotation.MaxFileSize = plan.Groups[0].Group.Bytes / 2
	otherTbl, _ := e.openTable(other)
	half, err := lake.PlanCompaction(ctx, other, otherTbl, st, store, lake.PlanOptions{Now: later, MaxGroups: 1})
	if err != nil || len(half.Groups) != 1 || half.Groups[0].Group.Partition != plan.Groups[0].Group.Partition {
		t.Fatalf("the other plan: %+v, %v; want one group of partition %s", half, err, plan.Groups[0].Group.Partition)
	}
	if rep, err := half.Apply(ctx, otherTbl, store, nil); err != nil || rep.Groups[0].Compacted == "" {
		t.Fatalf("the other compaction: %+v, %v", rep, err)
	}
	// Data commits land in the table.
	last := e.publish(20, 2)
	e.runUntilIdle(c, time.Minute)

	rep, err := plan.Apply(ctx, tbl, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Groups[0]; r.Compacted != "" || r.Skipped != "another compaction took its files first" {
		t.Errorf("the group whose files were taken: compacted %q, skipped %q", r.Compacted, r.Skipped)
	}
	if r := rep.Groups[1]; r.Compacted == "" {
		t.Errorf("the group whose files are there: skipped %q", r.Skipped)
	}
	tr := e.readTable(c, catalog)
	if problems := tr.Check(last); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	e.verify(c)
}
