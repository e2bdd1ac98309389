package lake

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// PlanOptions choose what PlanCompaction looks for.
type PlanOptions struct {
	Now time.Time // zero: time.Now()
	// MaxGroups bounds the groups of the plan, so that a pass inside run
	// ends soon; zero plans every group.
	MaxGroups int
	// Orphans makes the plan name the orphan data files to remove (and the
	// foreign ones it leaves), which lists the table's data folder.
	Orphans bool
	// OrphanAge is how old a data file in no snapshot, intent or plan must
	// be to be removed; zero means DefaultOrphanAge.
	OrphanAge time.Duration
}

// CompactPlan is what a compaction pass of a connector's table is to do,
// decided from the table, the state bucket and the store as they were
// when PlanCompaction read them. Apply does it; a dry run reports it.
type CompactPlan struct {
	// Groups are the groups of small files to compact, in the order the
	// table lists them, at most PlanOptions.MaxGroups.
	Groups []PlannedGroup
	// Orphans are the locations of the data files to remove: in no
	// snapshot, intent or plan, older than the orphan age, written by this
	// connector for this table (by its UUID), and compacted files never
	// swapped in or copies of sequences the table holds. A stored batch's
	// file whose sequences the table does not hold is in neither list: the
	// next run commits it (see restoreIntents). So is a compacted file of
	// a group of this plan, which Apply may yet swap in.
	Orphans []string
	// Foreign are the files under the table's data folder that no
	// snapshot, intent or plan names and that this connector did not write
	// for this table (another connector's, another engine's, or written
	// before jetlake recorded who wrote a file): never removed.
	Foreign []string
	// Upkeep is what the table needs as planned, before Apply.
	Upkeep iceberg.Upkeep

	cfg   *config.Connector
	table string                 // the UUID of the table planned
	co    iceberg.CompactOptions // what the groups were chosen by
}

// PlannedGroup is a group of small files a plan compacts, with what its
// compacted file's metadata takes from them.
type PlannedGroup struct {
	Group iceberg.CompactGroup
	// Stream and StreamCreated are the stream every file of the group is
	// of, as their metadata says.
	Stream, StreamCreated string
	// Skip is why Apply leaves the group alone; empty to compact it.
	Skip string
}

// PlanCompaction reads what a compaction pass of connector cfg's table t
// is to do, and writes nothing: the groups of small data files of the
// closed partitions (a partition is closed once its newest row is older
// than compact_after), leaving alone the files whose commit plans st keeps
// (their intents may still name them); with o.Orphans, the orphan data
// files to remove and the foreign ones to leave (see CompactPlan.Orphans);
// and what the table needs (iceberg.Upkeep). Errors of the table, the
// state bucket and the store are returned wrapped.
func PlanCompaction(ctx context.Context, cfg *config.Connector, t *iceberg.Table, st state.Store, store objstore.ObjectStore, o PlanOptions) (*CompactPlan, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	planned, err := PlannedFiles(ctx, st, cfg)
	if err != nil {
		return nil, err
	}
	p := &CompactPlan{cfg: cfg, table: t.UUID(), co: iceberg.CompactOptions{
		TargetSize:   cfg.Rotation.MaxFileSize,
		ClosedBefore: o.Now.Add(-cfg.Iceberg.CompactAfter),
		Exclude:      planned,
	}}
	groups, u, err := t.Survey(ctx, p.co)
	if err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	p.Upkeep = u
	if o.MaxGroups > 0 && len(groups) > o.MaxGroups {
		groups = groups[:o.MaxGroups]
	}
	for _, g := range groups {
		pg, err := planGroup(ctx, cfg, store, g)
		if err != nil {
			return nil, err
		}
		p.Groups = append(p.Groups, pg)
	}
	if o.Orphans {
		if err := p.planOrphans(ctx, t, st, store, planned, o.Now.Add(-cmp.Or(o.OrphanAge, DefaultOrphanAge))); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// planGroup reads the metadata of a group's files, 16 requests at a time:
// they must be of one stream, as every data object is (a partitioning
// without the subject can put two streams in one folder), whose name and
// creation the compacted file carries.
func planGroup(ctx context.Context, cfg *config.Connector, store objstore.ObjectStore, g iceberg.CompactGroup) (PlannedGroup, error) {
	pg := PlannedGroup{Group: g}
	bucket := "s3://" + cfg.S3.Bucket + "/"
	mds := make([]map[string]string, len(g.Files))
	heads, hctx := errgroup.WithContext(ctx)
	heads.SetLimit(16)
	for i, loc := range g.Files {
		heads.Go(func() error {
			md, err := store.Head(hctx, strings.TrimPrefix(loc, bucket))
			if err != nil {
				return fmt.Errorf("compact %s: %w", loc, err)
			}
			mds[i] = md
			return nil
		})
	}
	if err := heads.Wait(); err != nil {
		return pg, err
	}
	pg.Stream, pg.StreamCreated = mds[0][objstore.MetaStream], mds[0][objstore.MetaStreamCreated]
	for _, md := range mds {
		if md[objstore.MetaStream] != pg.Stream || md[objstore.MetaStreamCreated] != pg.StreamCreated || pg.Stream == "" {
			pg.Skip = "its files are of more than one stream"
			break
		}
	}
	return pg, nil
}

// planOrphans finds the data files under the table's data folder that no
// snapshot the table keeps (data or delete manifests), no intent and no
// commit plan names, that were last modified before cutoff, and sorts them
// into p.Orphans and p.Foreign: of those whose own metadata says this
// connector wrote them for this table (by its UUID), only compacted files
// whose swap never happened and batches' files whose sequences the table's
// current snapshot holds (a compaction replaced them) are orphans; a
// batch's file that holds sequences the table lacks lost its intent (the
// state bucket was purged), and the next run commits it. Every other
// unnamed file is foreign: another connector's or engine's, a table's
// before it was made anew, or one written before files carried their
// writer. A store that cannot list has neither.
func (p *CompactPlan) planOrphans(ctx context.Context, t *iceberg.Table, st state.Store, store objstore.ObjectStore, planned map[string]bool, cutoff time.Time) error {
	ls, ok := store.(OrphanStore)
	if !ok {
		return nil
	}
	cfg := p.cfg
	_, dataPrefix, err := iceberg.ConnectorConfig(cfg)
	if err != nil {
		return err
	}
	refs, err := t.ReferencedFiles(ctx)
	if err != nil {
		return fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	intents, err := st.List(ctx, statekey.Intents(cfg.Name))
	if err != nil {
		return fmt.Errorf("list intents: %w", err)
	}
	named := map[string]bool{}
	for key, value := range intents {
		var in state.Intent
		if err := json.Unmarshal(value, &in); err != nil {
			return fmt.Errorf("intent %s: %w", key, err)
		}
		named[in.Key] = true
	}
	// The compacted file of a group of this plan may be in the store
	// already (a compaction of the same files that died before its swap):
	// Apply swaps it in, so it is no orphan.
	swapping := map[string]bool{}
	for _, pg := range p.Groups {
		swapping[pg.Group.ID()] = true
	}
	bucket := "s3://" + cfg.S3.Bucket + "/"
	var unnamed []string
	err = ls.ListModified(ctx, dataPrefix+"/", func(key string, modified time.Time) error {
		loc := bucket + key
		if refs[loc] || planned[loc] || named[key] || !modified.Before(cutoff) {
			return nil
		}
		unnamed = append(unnamed, key)
		return nil
	})
	if err != nil {
		return err
	}
	held, err := t.HeldRanges(ctx)
	if err != nil {
		return fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	ts := NewTableSeqs(store, bucket, held)
	for _, key := range unnamed {
		md, err := store.Head(ctx, key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("orphan %s%s: %w", bucket, key, err)
		}
		if !state.OwnFile(md, cfg, p.table) {
			p.Foreign = append(p.Foreign, bucket+key)
			continue
		}
		if id := md[objstore.MetaCompaction]; id != "" {
			if swapping[id] {
				continue
			}
		} else {
			copied, err := heldCopy(ctx, ts, md)
			if err != nil {
				return err
			}
			if !copied {
				continue // a stored batch that lost its record: run commits it
			}
		}
		p.Orphans = append(p.Orphans, bucket+key)
	}
	return nil
}

// PlannedFiles returns the locations of the data files the commit plans in
// the state bucket name.
func PlannedFiles(ctx context.Context, st state.Store, cfg *config.Connector) (map[string]bool, error) {
	prefix := statekey.Plans(statekey.Commits(cfg.Name, cfg.Iceberg.Namespace, cfg.Iceberg.Table))
	entries, err := st.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list commit plans: %w", err)
	}
	out := map[string]bool{}
	for key, value := range entries {
		var p iceberg.Plan
		if err := json.Unmarshal(value, &p); err != nil {
			return nil, fmt.Errorf("commit plan %s: %w", key, err)
		}
		for _, f := range p.Files {
			out[f.Location] = true
		}
	}
	return out, nil
}

// heldCopy reports whether the table holds every sequence a batch's data
// file holds, by its metadata and that of the table's files: the file is
// a copy of rows the table has (a compaction replaced it).
func heldCopy(ctx context.Context, ts *TableSeqs, md map[string]string) (bool, error) {
	seqs, ok := objstore.SeqsOf(md)
	if !ok {
		return false, nil
	}
	n, known, err := ts.Holds(ctx, md[objstore.MetaStream], seqs)
	return known && n == seqs.Len(), err
}
