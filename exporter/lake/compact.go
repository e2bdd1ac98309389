package lake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
)

// CompactOptions are the options of Compact.
type CompactOptions struct {
	DryRun bool      // plan only: report the groups and orphans, change nothing
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

// CompactReport is what a compaction pass did (CompactPlan.Apply), or on
// a dry run would do (CompactPlan.Report).
type CompactReport struct {
	Groups []*CompactResult
	// Orphans are the orphan data files (see CompactPlan.Orphans) removed,
	// or on a dry run to remove.
	Orphans []string
	// Foreign are the unnamed files left alone (see CompactPlan.Foreign).
	// Orphans and Foreign stay empty when a group's compaction failed: the
	// pass ends before its orphans.
	Foreign []string
	// Expired counts the snapshots expired after the groups were
	// compacted: each replace adds one, and keep_snapshots holds after
	// compaction as after data commits. ExpireErr is why expiry failed
	// or left files behind; the compaction itself stands.
	Expired   int
	ExpireErr error
	// Upkeep is what the table needs after the pass; nil on a dry run and
	// when the pass failed.
	Upkeep *iceberg.Upkeep
}

// CompactResult is what a pass did to one group of small files.
type CompactResult struct {
	Group     iceberg.CompactGroup
	Compacted string // the new file's location; empty on a dry run or when skipped
	Bytes     int    // its size
	Skipped   string // why the group was left alone
}

// Compact rewrites the small data files of the closed partitions of a
// connector's Iceberg table into files near max_file_size, one atomic
// replace per group, with rows sorted by sequence, and removes its orphan
// data files: PlanCompaction, then, unless o.DryRun, CompactPlan.Apply.
// It loads the table and refuses one that is not the table run writes.
func Compact(ctx context.Context, cfg *config.Connector, js jetstream.JetStream, store objstore.ObjectStore, o CompactOptions) (*CompactReport, error) {
	if cfg.Iceberg == nil {
		return nil, fmt.Errorf("connector %s writes no Iceberg table: nothing to compact", cfg.Name)
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
	plan, err := PlanCompaction(ctx, cfg, t, st, store, PlanOptions{Now: o.Now, Orphans: true, OrphanAge: o.OrphanAge})
	if err != nil {
		return &CompactReport{}, err
	}
	o.Progress.plan(len(plan.Groups))
	if o.DryRun {
		o.Progress.doneN(len(plan.Groups))
		return plan.Report(), nil
	}
	return plan.Apply(ctx, t, store, o.Progress)
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

// Report is the plan as the report of a dry run: every group listed,
// the orphans to remove and the foreign files to leave.
func (p *CompactPlan) Report() *CompactReport {
	rep := &CompactReport{Orphans: p.Orphans, Foreign: p.Foreign}
	for _, pg := range p.Groups {
		rep.Groups = append(rep.Groups, &CompactResult{Group: pg.Group, Skipped: pg.Skip})
	}
	return rep
}

// deleter deletes objects: the S3 store.
type deleter interface {
	Delete(ctx context.Context, key string) error
}

// Apply does what the plan says to t, the table it was planned from: it
// compacts each group in turn (the compacted file stored like a data
// object, its sequences in its metadata, conditionally, then swapped for
// its group), expires the snapshots beyond keep_snapshots once a group
// was compacted (see ExpireTable), reads what the table needs after, and
// removes the orphans. A data commit racing a swap is retried around,
// never lost; a group whose files another compaction took since the plan
// is skipped; a compaction tried again after a crash finds its own file
// and id. The first error ends the pass before the orphans; the report
// holds what was done until then, and counts (nil: none) each group done.
func (p *CompactPlan) Apply(ctx context.Context, t *iceberg.Table, store objstore.ObjectStore, counts *CompactProgress) (*CompactReport, error) {
	rep := &CompactReport{}
	if id := t.UUID(); id != p.table {
		return rep, fmt.Errorf("iceberg table %s: a compaction planned for the table with UUID %s, not %s", t.Name(), p.table, id)
	}
	cfg := p.cfg
	var err error
	compacted := false
	for _, pg := range p.Groups {
		res := &CompactResult{Group: pg.Group, Skipped: pg.Skip}
		rep.Groups = append(rep.Groups, res)
		if pg.Skip == "" {
			err = compactGroup(ctx, cfg, t, store, pg, res)
			compacted = compacted || res.Compacted != ""
			if err != nil {
				break
			}
		}
		counts.doneOne()
	}
	if compacted {
		rep.Expired, rep.ExpireErr = ExpireTable(ctx, t, cfg.Iceberg, time.Now())
	}
	if err != nil {
		return rep, err
	}
	u := p.Upkeep
	if len(p.Groups) > 0 {
		// The groups changed the table, or a race did.
		if u, err = t.Upkeep(ctx, p.co); err != nil {
			return rep, err
		}
	}
	rep.Upkeep = &u
	rep.Foreign = p.Foreign
	if len(p.Orphans) == 0 {
		return rep, nil
	}
	del, ok := store.(deleter)
	if !ok {
		return rep, fmt.Errorf("remove orphans: store %T deletes no objects", store)
	}
	bucket := "s3://" + cfg.S3.Bucket + "/"
	for _, loc := range p.Orphans {
		if err := del.Delete(ctx, strings.TrimPrefix(loc, bucket)); err != nil {
			return rep, fmt.Errorf("remove orphan %s: %w", loc, err)
		}
		rep.Orphans = append(rep.Orphans, loc)
	}
	return rep, nil
}

// compactGroup rewrites one planned group, stores the result and swaps it
// in.
func compactGroup(ctx context.Context, cfg *config.Connector, t *iceberg.Table, store objstore.ObjectStore, pg PlannedGroup, res *CompactResult) error {
	g := pg.Group
	bucket := "s3://" + cfg.S3.Bucket + "/"
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
			objstore.MetaStream:        pg.Stream,
			objstore.MetaStreamCreated: pg.StreamCreated,
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
