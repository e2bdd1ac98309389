package lake

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// CompactOptions are the options of Compact.
type CompactOptions struct {
	DryRun bool      // find the groups and orphans, change nothing
	Now    time.Time // zero: time.Now()
	// OrphanAge is how old a data file in no snapshot, intent or plan must
	// be to be removed; zero means DefaultOrphanAge.
	OrphanAge time.Duration
	// Progress counts the groups planned and done as Compact goes; nil
	// for none.
	Progress *CompactProgress
}

// DefaultOrphanAge is how old an orphan data file must be to be removed,
// as iceberg-go's own orphan cleanup has it. Every data file jetlake writes
// is named by an intent before it is stored, except a compacted one, which
// its swap puts in the table within a minute; three days also outlast a
// writer paused over a weekend and clocks that disagree.
const DefaultOrphanAge = 72 * time.Hour

// CompactReport is what Compact did.
type CompactReport struct {
	Groups []*CompactResult
	// Orphans are the data files no snapshot, intent or plan names, older
	// than OrphanAge, whose metadata says this connector wrote them for
	// this table, and that are compacted files never swapped in or copies
	// of sequences the table holds: removed (or, on a dry run, to remove).
	// A stored batch's file whose sequences the table does not hold stays
	// for the next run to commit (see restoreIntents).
	Orphans []string
	// Foreign are the files under the table's data folder that no
	// snapshot, intent or plan names and that this connector did not write
	// for this table (another connector's, another engine's, or written
	// before jetlake recorded who wrote a file): never removed.
	Foreign []string
	// Expired counts the snapshots expired after the groups were
	// compacted: each replace adds one, and keep_snapshots holds after
	// compaction as after data commits. ExpireErr is why expiry failed
	// or left files behind; the compaction itself stands.
	Expired   int
	ExpireErr error
}

// CompactResult is what Compact did to one group of small files.
type CompactResult struct {
	Group     iceberg.CompactGroup
	Compacted string // the new file's location; empty on a dry run or when skipped
	Bytes     int    // its size
	Skipped   string // why the group was left alone
}

// Compact rewrites the small data files of the closed partitions of a
// connector's Iceberg table into files near max_file_size, one atomic
// replace per group, with rows sorted by sequence. A partition is closed
// once its newest row is older than compact_after. Files whose commit
// plans the state bucket keeps (their intents may still name them) are
// left alone. Each compacted file is stored like a data object (its
// sequences in its metadata, conditionally), then swapped for its group in
// the table; a data commit racing the swap is retried around, never lost,
// and a compaction tried again after a crash finds its own file and id.
func Compact(ctx context.Context, cfg *config.Connector, js jetstream.JetStream, store objstore.ObjectStore, o CompactOptions) (*CompactReport, error) {
	if cfg.Iceberg == nil {
		return nil, fmt.Errorf("connector %s writes no Iceberg table: nothing to compact", cfg.Name)
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	icfg, _, err := iceberg.ConnectorConfig(cfg)
	if err != nil {
		return nil, err
	}
	t, err := iceberg.Load(ctx, icfg)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	// The same table run writes, or none: the checks run makes.
	if err := t.CheckLocation(icfg.Location()); err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	st, err := state.Open(ctx, js, cfg.State.Bucket, cfg.State.Replicas)
	if err != nil {
		return nil, err
	}
	if err := state.CheckTableID(ctx, st, cfg, t, false); err != nil {
		return nil, err
	}
	rep := &CompactReport{}
	if _, err = CompactTable(ctx, cfg, t, st, store, o, 0, rep); err != nil {
		return rep, err
	}
	rep.Orphans, rep.Foreign, err = RemoveOrphans(ctx, cfg, t, st, store, o)
	return rep, err
}

// OrphanStore lists objects with their age and deletes them: the S3 store.
type OrphanStore interface {
	ListModified(ctx context.Context, prefix string, fn func(key string, modified time.Time) error) error
	Delete(ctx context.Context, key string) error
}

// SweptStore is a store whose objects can be written, looked up, listed
// with their age and deleted: what reading a table's data folder back
// takes (the S3 store is one).
type SweptStore interface {
	objstore.ObjectStore
	OrphanStore
}

// RemoveOrphans removes the data files under the table's data folder that
// no snapshot the table keeps (data or delete manifests), no intent and no
// commit plan names, that are older than o.OrphanAge, and whose own
// metadata says this connector wrote them for this table (by its UUID).
// Of those, only compacted files whose swap never happened and batches'
// files whose sequences the table's current snapshot holds (a compaction
// replaced them) are removed: a batch's file that holds sequences the
// table lacks lost its intent (the state bucket was purged), and the next
// run commits it. Every other unnamed file is foreign and stays: another
// connector's or engine's, a table's before it was made anew, or one
// written before files carried their writer.
func RemoveOrphans(ctx context.Context, cfg *config.Connector, t *iceberg.Table, st state.Store, store objstore.ObjectStore, o CompactOptions) (orphans, foreign []string, err error) {
	ls, ok := store.(OrphanStore)
	if !ok {
		return nil, nil, nil
	}
	_, dataPrefix, err := iceberg.ConnectorConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	refs, err := t.ReferencedFiles(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	planned, err := PlannedFiles(ctx, st, cfg)
	if err != nil {
		return nil, nil, err
	}
	intents, err := st.List(ctx, statekey.Intents(cfg.Name))
	if err != nil {
		return nil, nil, fmt.Errorf("list intents: %w", err)
	}
	named := map[string]bool{}
	for key, value := range intents {
		var in state.Intent
		if err := json.Unmarshal(value, &in); err != nil {
			return nil, nil, fmt.Errorf("intent %s: %w", key, err)
		}
		named[in.Key] = true
	}
	cutoff := o.Now.Add(-cmp.Or(o.OrphanAge, DefaultOrphanAge))
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
		return nil, nil, err
	}
	held, err := t.HeldRanges(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	ts := NewTableSeqs(store, bucket, held)
	id := t.UUID()
	for _, key := range unnamed {
		md, err := store.Head(ctx, key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return orphans, foreign, fmt.Errorf("orphan %s%s: %w", bucket, key, err)
		}
		if !state.OwnFile(md, cfg, id) {
			foreign = append(foreign, bucket+key)
			continue
		}
		if md[objstore.MetaCompaction] == "" {
			copied, err := heldCopy(ctx, ts, md)
			if err != nil {
				return orphans, foreign, err
			}
			if !copied {
				continue // a stored batch that lost its record: run commits it
			}
		}
		if !o.DryRun {
			if err := ls.Delete(ctx, key); err != nil {
				return orphans, foreign, fmt.Errorf("remove orphan %s%s: %w", bucket, key, err)
			}
		}
		orphans = append(orphans, bucket+key)
	}
	return orphans, foreign, nil
}

// CompactTable compacts up to limit groups of t (0: all), the files the
// plans in st name left alone, into rep.Groups, and expires the snapshots
// beyond keep_snapshots once a group was compacted (see expireTable).
// It returns what the table needs after the pass.
func CompactTable(ctx context.Context, cfg *config.Connector, t *iceberg.Table, st state.Store, store objstore.ObjectStore, o CompactOptions, limit int, rep *CompactReport) (iceberg.Upkeep, error) {
	exclude, err := PlannedFiles(ctx, st, cfg)
	if err != nil {
		return iceberg.Upkeep{}, err
	}
	co := iceberg.CompactOptions{
		TargetSize:   cfg.Rotation.MaxFileSize,
		ClosedBefore: o.Now.Add(-cfg.Iceberg.CompactAfter),
		Exclude:      exclude,
	}
	groups, err := t.CompactionGroups(ctx, co)
	if err != nil {
		return iceberg.Upkeep{}, fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	if limit > 0 && len(groups) > limit {
		groups = groups[:limit]
	}
	o.Progress.plan(len(groups))
	compacted := false
	for _, g := range groups {
		res := &CompactResult{Group: g}
		rep.Groups = append(rep.Groups, res)
		if o.DryRun {
			o.Progress.doneOne()
			continue
		}
		err = compactGroup(ctx, cfg, t, store, res)
		compacted = compacted || res.Compacted != ""
		if err != nil {
			break
		}
		o.Progress.doneOne()
	}
	if compacted {
		rep.Expired, rep.ExpireErr = ExpireTable(ctx, t, cfg.Iceberg, time.Now())
	}
	if err != nil {
		return iceberg.Upkeep{}, err
	}
	return t.Upkeep(ctx, co)
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

// compactGroup rewrites one group, stores the result and swaps it in.
func compactGroup(ctx context.Context, cfg *config.Connector, t *iceberg.Table, store objstore.ObjectStore, res *CompactResult) error {
	g := res.Group
	bucket := "s3://" + cfg.S3.Bucket + "/"
	// The files must be of one stream, as every data object is: a
	// partitioning without the subject can put two streams in one folder.
	// The metadata of each, 16 requests at a time.
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
		return err
	}
	stream, created := mds[0][objstore.MetaStream], mds[0][objstore.MetaStreamCreated]
	for _, md := range mds {
		if md[objstore.MetaStream] != stream || md[objstore.MetaStreamCreated] != created || stream == "" {
			res.Skipped = "its files are of more than one stream"
			return nil
		}
	}
	c, err := t.Rewrite(ctx, g)
	if err != nil {
		return err
	}
	key := strings.TrimPrefix(c.Location, bucket)
	opts := objstore.PutOptions{
		ContentType: "application/vnd.apache.parquet",
		Metadata: map[string]string{
			objstore.MetaFirstSeq:      strconv.FormatUint(c.Seqs[0], 10),
			objstore.MetaLastSeq:       strconv.FormatUint(c.Seqs[len(c.Seqs)-1], 10),
			objstore.MetaCount:         strconv.Itoa(len(c.Seqs)),
			objstore.MetaFormat:        string(formats.Parquet),
			objstore.MetaStream:        stream,
			objstore.MetaStreamCreated: created,
			objstore.MetaCompaction:    g.ID(),
			objstore.MetaConnector:     cfg.Name,
			objstore.MetaTable:         t.UUID(),
		},
		IfNoneMatch: true,
	}
	if enc, err := progress.NewSeqs(c.Seqs).MarshalJSON(); err == nil {
		objstore.SetSeqs(opts.Metadata, enc)
	}
	err = store.Put(ctx, key, formats.NewBody(c.Body), opts)
	if errors.Is(err, objstore.ErrExists) {
		// A compaction of the same files that died before its swap.
		md, herr := store.Head(ctx, key)
		if herr != nil {
			return herr
		}
		if md[objstore.MetaCompaction] != g.ID() {
			return &objstore.CollisionError{Key: key, Intent: md[objstore.MetaIntent], Stream: md[objstore.MetaStream], StreamCreated: md[objstore.MetaStreamCreated]}
		}
	} else if err != nil {
		return fmt.Errorf("store %s: %w", key, err)
	}
	err = t.Replace(ctx, g, c.Location)
	if errors.Is(err, iceberg.ErrCompactedAlready) {
		res.Skipped = "another compaction took its files first"
		return nil
	}
	if err != nil {
		return err
	}
	res.Compacted, res.Bytes = c.Location, len(c.Body)
	return nil
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

// ExpireTable expires the snapshots of t beyond keep_snapshots older than
// snapshot_retention, when there are some. Every commit that adds a
// snapshot is followed by it: data commits, and compaction's replaces,
// inside run and in jetlake compact alike.
func ExpireTable(ctx context.Context, t *iceberg.Table, ic *config.Iceberg, now time.Time) (int, error) {
	keep := cmp.Or(ic.KeepSnapshots, 100)
	if !t.ExpiryDue(keep, ic.SnapshotRetention, now) {
		return 0, nil
	}
	return t.ExpireSnapshots(ctx, keep, ic.SnapshotRetention)
}
