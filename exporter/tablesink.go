package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/pathtemplate"
)

// The Iceberg table as a sink: its data files go under the table's data
// folder in folders of its partitions, one buffer per partition; what is
// stored waits in the FileBook for a commit, and an intent goes only once
// its file is in the table and its plan can go with it.

func (lt *lakeTable) appendDir(buf []byte, v *pathtemplate.Values, seq uint64, ts time.Time, vals []formats.Value) []byte {
	return lt.part.AppendDir(buf, v.Stream, v.Subject, seq, ts, vals)
}

// appendGroup: a data file holds one partition, so a buffer does too.
func (lt *lakeTable) appendGroup(grp, dir []byte, _ string) []byte { return append(grp, dir...) }

func (lt *lakeTable) manyDirs() bool { return true }

func (lt *lakeTable) keyPrefix() string { return lt.dataPrefix }

func (lt *lakeTable) tail(body formats.Body) *iceberg.Tail { return iceberg.TailOf(body) }

// label names the connector and the table in a data file's metadata: what
// restores its intent should the state bucket lose it (recoverFiles).
func (lt *lakeTable) label(meta map[string]string) {
	meta[objstore.MetaConnector] = lt.connector
	meta[objstore.MetaTable] = lt.uuid
}

func (lt *lakeTable) stored(ikey, key string, first, last uint64, tail *iceberg.Tail) {
	lt.files.Stored(ikey, key, first, last, tail)
}

// found records an intent recovery found whose object exists (see
// iceberg.FileBook.Found).
func (lt *lakeTable) found(ikey string, in *state.Intent) {
	lt.files.Found(ikey, in.Key, in.Seqs.First(), in.Seqs.Last())
}

// forgettable keeps the intents of files not in the table yet: recovery
// commits a file by its intent.
func (lt *lakeTable) forgettable(keys []string) []string { return lt.files.Forgettable(keys) }

// settled reports whether no data file waits for a commit; when one does,
// the next commit is due at once.
func (lt *lakeTable) settled() bool {
	if lt.files.Pending() == 0 && lt.committing == nil && lt.failed == nil {
		return true
	}
	lt.commitSoon = true
	return false
}

// chores are the table's commits and compaction passes, and the deletion
// of the plans whose intents are gone.
func (lt *lakeTable) chores(r *runner) (upkeep, cleanup []*chore) {
	upkeep = []*chore{lt.commitChore(r.forget, r.fail)}
	if c := r.compactChore(lt); c != nil {
		upkeep = append(upkeep, c)
	}
	return upkeep, []*chore{lt.planChore()}
}

// setUpDone deletes the plans whose intents are all gone: their files are
// in the table.
func (lt *lakeTable) setUpDone(ctx context.Context) error {
	for _, p := range lt.files.Unclaimed() {
		if err := lt.committer.Forget(ctx, p); err != nil {
			return err
		}
		lt.files.DropPlan(p)
	}
	return nil
}

func (lt *lakeTable) close() { lt.t.Close() }

// namedFiles returns the object keys of the data files an Iceberg
// connector stored that the intents and commit plans in the state bucket
// name: recovery commits them, and the export record counts them stored.
func (lt *lakeTable) namedFiles(ctx context.Context, e *session) (map[string]bool, error) {
	out, err := state.NamedFiles(ctx, e.intents, e.cfg.Name)
	if err != nil {
		return nil, err
	}
	planned, err := lake.PlannedFiles(ctx, e.intents, e.cfg)
	if err != nil {
		return nil, err
	}
	for loc := range planned {
		if key, ok := strings.CutPrefix(loc, "s3://"+lt.bucket+"/"); ok {
			out[key] = true
		}
	}
	return out, nil
}

// forgotten records deleted intents: the commit plans
// none of whose intents is left are queued to go too (planChore). A plan
// one of whose intents could not be deleted stays, so that the next
// recovery finds the intent in its plan and does not commit the file
// again.
func (lt *lakeTable) forgotten(keys []string, failed map[string]bool) {
	var deleted []string
	for _, k := range keys {
		if !failed[k] {
			deleted = append(deleted, k)
		}
	}
	lt.planQueue = append(lt.planQueue, lt.files.Forgotten(deleted)...)
}

// planChore deletes the queued commit plans beside the loop, and those
// left on the way out.
func (lt *lakeTable) planChore() *chore {
	return &chore{
		name: "plans", keepOnStop: true, atShutdown: true, queue: true,
		due: func(time.Time, bool) bool { return len(lt.planQueue) > 0 },
		start: func(time.Time) choreWork {
			plans := lt.planQueue
			lt.planQueue = nil
			return func(ctx context.Context) (func(), error) {
				ctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				for _, p := range plans {
					if err := lt.committer.Forget(ctx, p); err != nil {
						lt.log.Warn("could not delete a committed plan; the next start will", "plan", p.ID, "error", err)
					}
				}
				return nil, nil
			}
		},
	}
}

// recoverFiles gives back their intents to the data files of s that this
// connector stored for its table but that nothing records for commit (see
// lake.Unrecorded); recovery then treats each as any stored batch: it is
// committed, and its messages are acked without being written again should
// they come back.
func (lt *lakeTable) recoverFiles(ctx context.Context, e *session, s *streamWriter) error {
	ls, ok := e.store.(lake.SweptStore)
	if !ok {
		return nil
	}
	u := &lake.Unrecorded{Cfg: e.cfg, Table: lt.t, DataPrefix: lt.dataPrefix, Bucket: lt.bucket, State: e.intents, Store: ls, Log: e.log,
		Untrusted: func() { e.m.Untrusted.WithLabelValues(e.cfg.Name, "data-file").Inc() }}
	found, err := u.Intents(ctx, s.cfg.Stream, s.created, s.cfg.Consumer)
	if err != nil {
		return err
	}
	for _, in := range found {
		value, err := json.Marshal(in)
		if err != nil {
			return err
		}
		err = e.intents.Create(ctx, s.intentPrefix+in.ID, value)
		if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("restore the intent of %s: %w", in.Key, err)
		}
		e.log.Warn("recovery: a stored data file had no record in the state bucket; its intent is restored from its metadata and it is committed",
			"key", in.Key, "first_seq", in.Seqs.First(), "last_seq", in.Seqs.Last(), "messages", in.Seqs.Len())
	}
	return nil
}
