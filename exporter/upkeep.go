package exporter

import (
	"context"
	"path"
	"time"

	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/internal/iceberg"
)

// Upkeep of a connector's Iceberg table inside run: snapshot expiry after
// commits, and compaction passes with orphan removal on a timer, beside the
// loop and never at the same time as a commit. A pass is planned
// (lake.PlanCompaction), then applied (CompactPlan.Apply).

// expireSnapshots expires, beside the loop and after a commit, the
// snapshots beyond keep_snapshots older than snapshot_retention, when there
// are some.
func (lt *lakeTable) expireSnapshots(ctx context.Context) (int, error) {
	return lake.ExpireTable(ctx, lt.t, lt.ic, time.Now())
}

// snapshotsExpired reports an expiry.
func (lt *lakeTable) snapshotsExpired(n int, err error) {
	if err != nil {
		lt.log.Warn("could not expire snapshots; trying again after the next commit", "table", lt.t.Name(), "error", err)
		return
	}
	if n > 0 {
		lt.m.Expired.WithLabelValues(lt.connector, lt.t.Name()).Add(float64(n))
		lt.m.TableSnapshots.WithLabelValues(lt.connector, lt.t.Name()).Set(float64(lt.t.Snapshots()))
		lt.log.Info("iceberg snapshots expired", "table", lt.t.Name(), "expired", n, "kept", lt.t.Snapshots())
	}
}

// compactPassGroups bounds the groups one compaction pass inside run
// rewrites, so that the next data commit waits little.
const compactPassGroups = 16

// compactChore runs a compaction pass beside the loop every half
// compact_after (commit_interval at least), when no commit is under way:
// partitions close at that pace. Commits wait for the pass, which is
// bounded to compactPassGroups groups. Nil without a state bucket (a
// test of the runner alone).
func (r *runner) compactChore(lt *lakeTable) *chore {
	if r.intents == nil {
		return nil
	}
	ic := r.cfg.Iceberg
	return &chore{
		name: "compact", keepOnStop: true,
		due: func(now time.Time, final bool) bool {
			return !final && lt.committing == nil && !lt.compacting && now.Sub(lt.lastCompact) >= max(ic.CompactAfter/2, ic.CommitInterval)
		},
		start: func(now time.Time) choreWork {
			lt.compacting, lt.lastCompact = true, now
			return func(ctx context.Context) (func(), error) {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				defer cancel()
				o := lake.PlanOptions{Now: now, MaxGroups: compactPassGroups, Orphans: ic.RemoveOrphans, OrphanAge: ic.OrphanAge}
				rep := &lake.CompactReport{}
				plan, err := lake.PlanCompaction(cctx, r.cfg, lt.t, r.intents, r.store, o)
				if err == nil {
					rep, err = plan.Apply(cctx, lt.t, r.store, nil)
				}
				return func() {
					lt.compacting = false
					if n := len(rep.Orphans); n > 0 {
						r.m.Orphans.WithLabelValues(r.cfg.Name, lt.t.Name()).Add(float64(n))
						r.log.Info("iceberg orphan data files removed", "table", lt.t.Name(), "files", n, "first", rep.Orphans[0])
					}
					if n := len(rep.Foreign); n > 0 && !lt.foreignSeen {
						lt.foreignSeen = true
						r.log.Warn("the table's data folder holds files in no snapshot that this connector did not write for this table; they are left alone",
							"table", lt.t.Name(), "files", n, "first", rep.Foreign[0])
					}
					lt.snapshotsExpired(rep.Expired, rep.ExpireErr)
					r.tableCompacted(lt, rep.Groups, rep.Upkeep, err)
				}, err
			}
		},
	}
}

// tableCompacted reports a compaction pass, and what the table needs after
// it (nil: not known).
func (r *runner) tableCompacted(lt *lakeTable, results []*lake.CompactResult, u *iceberg.Upkeep, err error) {
	if u != nil {
		name, table := r.cfg.Name, lt.t.Name()
		r.m.DataFiles.WithLabelValues(name, table).Set(float64(u.DataFiles))
		r.m.SmallFiles.WithLabelValues(name, table).Set(float64(u.SmallFiles))
		r.m.Compactable.WithLabelValues(name, table).Set(float64(u.Compactable))
		r.m.OldestClosed.WithLabelValues(name, table).Set(u.OldestClosed.Seconds())
		r.m.MetadataBytes.WithLabelValues(name, table).Set(float64(u.MetadataBytes))
	}
	for _, res := range results {
		if res.Compacted == "" {
			continue
		}
		r.m.CompactedFiles.WithLabelValues(r.cfg.Name, lt.t.Name()).Add(float64(len(res.Group.Files)))
		r.m.CompactedBytes.WithLabelValues(r.cfg.Name, lt.t.Name()).Add(float64(res.Group.Bytes))
		r.log.Info("iceberg files compacted", "table", lt.t.Name(), "partition", res.Group.Partition,
			"files", len(res.Group.Files), "bytes", res.Group.Bytes, "into", path.Base(res.Compacted))
	}
	if err != nil {
		r.log.Warn("compaction failed; trying again later", "table", lt.t.Name(), "error", err)
	}
}
