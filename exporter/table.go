package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/fault"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
	"github.com/jetlake/jetlake/pathtemplate"
)

// lakeTable is the Iceberg table a connector with [iceberg] writes, and what
// the runner knows of the data files on their way into it. A batch's data
// file is stored and acked like any object (its intent records it for
// commit); every commit_interval the files stored since the last commit are
// committed in one snapshot by an iceberg.Committer, beside the loop. An
// intent is deleted only once its file's plan is in the table and the
// export record's floor has passed it. Only the runner goroutine uses it
// once the runner runs.
type lakeTable struct {
	connector  string // the connector's name
	ic         *config.Iceberg
	m          *metrics.Metrics // the connector's
	log        *slog.Logger
	t          *iceberg.Table
	committer  *iceberg.Committer
	part       *iceberg.Partitioner
	dataPrefix string // object key prefix of the data files
	bucket     string
	uuid       string // the table's, in its data files' metadata

	files       *iceberg.FileBook // the data files on their way into the table
	committing  []iceberg.File    // in the commit under way
	failed      *iceberg.Plan     // recorded, its commit failed: tried again first
	failedWith  []iceberg.File    // the files handed to it
	lastCommit  time.Time
	backlog     bool            // more files wait than the last plan held
	commitSoon  bool            // commit at once: everything else is done (Options.UntilIdle)
	lastCompact time.Time       // when the last compaction pass started
	compacting  bool            // a compaction pass is under way, beside the loop
	foreignSeen bool            // foreign files in the data folder were reported
	planQueue   []*iceberg.Plan // committed plans none of whose intents is left, to delete
}

// openTable opens (or creates) the connector's table and commits the plans
// an earlier process left.
func (e *session) openTable(ctx context.Context) (*lakeTable, error) {
	cfg, dataPrefix, err := iceberg.ConnectorConfig(e.cfg)
	if err != nil {
		return nil, &failure.Permanent{Code: "IcebergCatalog", Err: err}
	}
	if err := state.RefuseMissingTable(ctx, e.intents, e.cfg, cfg); err != nil {
		return nil, err
	}
	t, err := iceberg.Open(ctx, cfg, formats.Fields(e.encOptions))
	if err != nil {
		return nil, err
	}
	if err := state.CheckTableID(ctx, e.intents, e.cfg, t, true); err != nil {
		t.Close()
		return nil, err
	}
	if ev := t.Evolved(); !ev.Empty() {
		e.log.Info("iceberg table schema evolved", "table", t.Name(), "changes", ev.String())
	}
	if err := e.adoptFieldIDs(t); err != nil {
		t.Close()
		return nil, err
	}
	part, err := t.Partitioner(iceberg.ColumnNames(&e.cfg.Output))
	if err != nil {
		t.Close()
		return nil, err
	}
	// Every partition value takes at most pathtemplate.MaxValueLen bytes
	// of a data file's key, so whether every key fits is known now, not
	// when a publisher's long subject comes.
	if n := maxDataKeyLen(dataPrefix, part, e.enc.Ext()); n > pathtemplate.MaxKeyLen {
		t.Close()
		return nil, &failure.Permanent{Code: "IcebergTable", Err: fmt.Errorf(
			"iceberg table %s: data file keys may be %d bytes long (%s/, a partition folder of up to %d bytes, a sequence range), more than S3's limit of %d; shorten s3.prefix, the namespace or table, or the partition fields",
			t.Name(), n, dataPrefix, part.MaxDirLen(), pathtemplate.MaxKeyLen)}
	}
	lt := e.newLakeTable(t, part, dataPrefix)
	plans, err := e.recoverPlans(ctx, lt)
	if err != nil {
		t.Close()
		return nil, err
	}
	e.log.Info("iceberg table ready", "table", t.Name(), "location", t.Location(), "plans_recovered", len(plans))
	return lt, nil
}

// adoptFieldIDs makes the encoder write the field ids the table has for
// its columns, which differ from a new table's once its schema evolved.
func (e *session) adoptFieldIDs(t *iceberg.Table) error {
	ids := t.FieldIDs()
	if maps.Equal(ids, e.encOptions.FieldIDs) {
		return nil
	}
	fo := e.encOptions
	fo.FieldIDs = ids
	enc, err := formats.New(fo)
	if err != nil {
		return err
	}
	e.enc, e.encOptions = enc, fo
	return nil
}

// newLakeTable returns the connector's table t with its committer, whose
// plans live in the state bucket.
func (e *session) newLakeTable(t *iceberg.Table, part *iceberg.Partitioner, dataPrefix string) *lakeTable {
	ic := e.cfg.Iceberg
	lt := &lakeTable{
		ic: ic, m: e.m, log: e.log,
		connector: e.cfg.Name, t: t, part: part, dataPrefix: dataPrefix, bucket: e.cfg.S3.Bucket, uuid: t.UUID(),
		committer: iceberg.NewCommitter(t, state.Plans(e.intents), statekey.Commits(e.cfg.Name, ic.Namespace, ic.Table)),
		files:     iceberg.NewFileBook(e.cfg.S3.Bucket, dataPrefix), lastCommit: time.Now(),
	}
	lt.committer.Summary = map[string]string{"jetlake.connector": e.cfg.Name}
	if nc := e.nc; nc != nil {
		lt.committer.MaxPlanBytes = min(iceberg.DefaultMaxPlanBytes, int(nc.MaxPayload())/2)
	}
	lt.committer.AfterPlan = func() { fault.Point("before-table-commit") }
	lt.committer.AfterCommit = func() { fault.Point("after-table-commit") }
	lt.committer.BeforeRecommit = func() { fault.Point("during-table-recovery") }
	lt.committer.CheckFile = e.planFileCheck(lt)
	return lt
}

// recoverPlans finishes the commits whose plans the state bucket keeps,
// and records which intents their files claim. A plan jetlake did not
// write stops the run with what to do.
func (e *session) recoverPlans(ctx context.Context, lt *lakeTable) ([]*iceberg.Plan, error) {
	t := lt.t
	plans, err := lt.committer.Recover(ctx)
	var pe *iceberg.PlanError
	if errors.As(err, &pe) {
		// A plan jetlake did not write, or one it can not have written:
		// committing it would put objects it never stored into the
		// table, and waiting mends nothing.
		return nil, &failure.Permanent{Code: "IcebergPlan", Err: fmt.Errorf(
			"iceberg table %s: recover commits: %w; inspect the key %s of the state bucket %s, and delete it if no jetlake process wrote it (nats kv del %s %s): its files that have an intent are then planned anew",
			t.Name(), err, pe.Key, e.cfg.State.Bucket, e.cfg.State.Bucket, pe.Key)}
	}
	if err != nil {
		return nil, fmt.Errorf("iceberg table %s: recover commits: %w", t.Name(), err)
	}
	lt.files.Recovered(plans)
	return plans, nil
}

// planFileCheck returns the Committer.CheckFile of a connector's table: a
// file of a plan found in the state bucket is committed only when an
// intent of the connector names it, the record every data file jetlake
// stores has from before its upload until after its plan is in the table.
func (e *session) planFileCheck(lt *lakeTable) func(context.Context, iceberg.File) error {
	prefix := statekey.Intents(e.cfg.Name)
	var intents map[string][]byte // listed once, at the first file checked
	return func(ctx context.Context, f iceberg.File) error {
		if !strings.HasPrefix(f.Intent, prefix) {
			return fmt.Errorf("%w: its intent key %q is not one of the connector's", iceberg.ErrRefused, f.Intent)
		}
		if intents == nil {
			var err error
			if intents, err = e.intents.List(ctx, prefix); err != nil {
				return err
			}
		}
		value, ok := intents[f.Intent]
		if !ok {
			return fmt.Errorf("%w: the state bucket holds no intent %s", iceberg.ErrRefused, f.Intent)
		}
		var in state.Intent
		if err := json.Unmarshal(value, &in); err != nil {
			return fmt.Errorf("%w: intent %s: %w", iceberg.ErrRefused, f.Intent, err)
		}
		if loc := lt.files.Location(in.Key); loc != f.Location {
			return fmt.Errorf("%w: its intent %s names %s", iceberg.ErrRefused, f.Intent, loc)
		}
		return nil
	}
}

// maxDataKeyLen is the longest object key of a data file under dataPrefix
// in a folder of part, with extension ext.
func maxDataKeyLen(dataPrefix string, part *iceberg.Partitioner, ext string) int {
	k := pathtemplate.AppendKey(nil, dataPrefix, make([]byte, part.MaxDirLen()), 0, 0, ext)
	return len(k)
}

// commitChore commits the stored files beside the loop when
// commit_interval has passed since the last commit, at once when more
// wait than a plan held or everything else is done, and on the way out
// within the shutdown timeout. A commit never runs beside a compaction
// pass. What a commit lets go (intents whose files are in the table) goes
// to forget; a failure that no retry mends, to fail.
func (lt *lakeTable) commitChore(forget func([]string), fail func(error)) *chore {
	return &chore{
		name: "commit", keepOnStop: true, atShutdown: true, byDeadline: true,
		due: func(now time.Time, final bool) bool {
			if lt.committing != nil || lt.compacting || lt.files.Pending() == 0 && lt.failed == nil {
				return false
			}
			return final || lt.commitSoon || lt.backlog || now.Sub(lt.lastCommit) >= lt.ic.CommitInterval
		},
		start: func(time.Time) choreWork {
			lt.commitSoon = false
			retry, files := lt.failed, lt.failedWith
			if retry != nil {
				lt.failed, lt.failedWith = nil, nil
			} else {
				files = lt.takePending()
			}
			lt.committing = files
			return func(ctx context.Context) (func(), error) {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				start := time.Now()
				plan, err := retry, error(nil)
				if retry != nil {
					err = lt.committer.Recommit(cctx, retry)
				} else {
					plan, err = lt.committer.Commit(cctx, files)
				}
				took := time.Since(start)
				expired, eerr := 0, error(nil)
				if err == nil {
					expired, eerr = lt.expireSnapshots(cctx)
				}
				return func() {
					done, fatal := lt.committed(plan, files, took, err)
					lt.snapshotsExpired(expired, eerr)
					forget(done)
					if fatal != nil {
						fail(fatal)
					}
				}, err
			}
		},
	}
}

// committed applies the outcome of a commit. It returns the intents the
// commit lets go, and the error when it failed for good.
func (lt *lakeTable) committed(plan *iceberg.Plan, files []iceberg.File, took time.Duration, err error) (done []string, fatal error) {
	lt.committing = nil
	lt.lastCommit = time.Now()
	var le *iceberg.LocationError
	if errors.As(err, &le) {
		// A file outside the table's data folder: no retry commits it.
		err = &failure.Permanent{Code: "IcebergPlan", Err: err}
	}
	m, name, table := lt.m, lt.connector, lt.t.Name()
	if errors.Is(err, iceberg.ErrAbandoned) {
		// Another instance's recovery released the plan's claims before
		// it was recorded: nothing of it is in the table, and its files
		// go into the next plan.
		lt.files.Return(files)
		lt.log.Info("iceberg commit plan abandoned by another instance's recovery; its files are planned again", "table", table, "files", len(files))
		return nil, nil
	}
	if err != nil {
		// Tried again after commit_interval, backlog or not.
		lt.backlog = false
		m.Commits.WithLabelValues(name, table, "failed").Inc()
		if plan != nil && len(plan.Files) > 0 {
			// Recorded: its files are claimed for it, and it is tried
			// again, under its own id, before anything else.
			lt.failed, lt.failedWith = plan, files
		} else {
			lt.files.Return(files)
		}
		lt.log.Warn("iceberg commit failed; trying again", "table", table, "files", len(files), "error", err)
		var pe *failure.Permanent
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, nil
	}
	lt.files.DropTails(files)
	for i := range plan.Files {
		plan.Files[i].Tail = nil
	}
	done = lt.files.Committed(plan, files)
	if len(plan.Files) == 0 {
		return done, nil // every file was in another plan
	}
	m.Commits.WithLabelValues(name, table, "committed").Inc()
	m.CommitSeconds.WithLabelValues(name, table).Observe(took.Seconds())
	m.CommitFiles.WithLabelValues(name, table).Observe(float64(len(plan.Files)))
	m.LastCommit.WithLabelValues(name, table).Set(float64(lt.lastCommit.Unix()))
	m.TableSnapshots.WithLabelValues(name, table).Set(float64(lt.t.Snapshots()))
	lt.log.Info("iceberg commit", "table", table, "commit", plan.ID, "files", len(plan.Files),
		"duration", took.Round(time.Millisecond))
	return done, nil
}

// takePending takes the pending files one plan holds, and notes whether
// more wait.
func (lt *lakeTable) takePending() []iceberg.File {
	files := lt.files.Take(lt.committer.Fit)
	lt.backlog = lt.files.Pending() > 0
	return files
}
