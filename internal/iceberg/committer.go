package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nuid"
	"golang.org/x/sync/errgroup"

	"github.com/jetlake/jetlake/internal/statekey"
)

// PlanStore keeps commit plans and claims: the state bucket in production.
// It is declared here, where it is used; the exporter's intent store
// implements it.
type PlanStore interface {
	// Create stores value under key; it fails with an error that
	// errors.Is ErrExists reports when the key exists.
	Create(ctx context.Context, key string, value []byte) error
	// Get returns key's value, or an error that errors.Is ErrMissing
	// reports when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns every key under prefix with its value.
	List(ctx context.Context, prefix string) (map[string][]byte, error)
	// Release deletes key if it holds value, in one conditional step; a
	// key that is missing or holds another value is left as it is.
	Release(ctx context.Context, key string, value []byte) error
}

// Errors a PlanStore reports.
var (
	ErrExists  = errors.New("key exists")
	ErrMissing = errors.New("no such key")
)

// ErrRefused is wrapped by what Committer.CheckFile reports of a file it
// refuses.
var ErrRefused = errors.New("not a file jetlake stored")

// ErrAbandoned is wrapped by what Commit or Recommit report of a plan that
// a Recover abandoned before it was recorded: its claims are released,
// nothing of it is committed, and its files are to be planned anew.
var ErrAbandoned = errors.New("commit plan abandoned before it was recorded: its files are planned anew")

// PlanError reports a commit plan of the PlanStore that Recover refuses to
// commit: a file it names is not under the table's data folder, or
// CheckFile refused it. Nothing of the plan is committed. Waiting does not
// mend it: the plan's key is to be inspected, and deleted if no jetlake
// process wrote it (its claims go at the next Recover, and files that
// have an intent are planned anew).
type PlanError struct {
	Key      string // the plan's key in the PlanStore
	Location string // the file refused; empty when the plan itself is
	Err      error
}

func (e *PlanError) Error() string {
	return fmt.Sprintf("commit plan %s: %v; nothing of the plan is committed", e.Key, e.Err)
}

func (e *PlanError) Unwrap() error { return e.Err }

// File is a stored data file waiting for its commit, and the intent that
// records it.
type File struct {
	Location    string `json:"location"` // s3://...
	Intent      string `json:"intent"`   // key of the intent in the state bucket
	First, Last uint64 // its lowest and highest stream sequence
	// Tail is the file's end as this process wrote it, when it kept it:
	// the commit reads the file's statistics from it instead of from the
	// store. It is not part of a recorded plan.
	Tail *Tail `json:"-"`
}

// Tail is the end of a parquet data file: its size, and its last bytes,
// which hold at least the footer and the 8 bytes after it.
type Tail struct {
	Size  int64
	Bytes []byte
}

// Plan is a commit decided before it is tried: recovery commits it, under
// the same id, unless the table holds it already.
type Plan struct {
	ID      string    `json:"id"`
	Table   string    `json:"table"`
	Files   []File    `json:"files"`
	Created time.Time `json:"created"`
	// Abandoned is set on the plan key a Recover took for claims whose
	// plan was not recorded: the plan's own record can no longer be
	// created, so its owner, were it only slow, commits nothing of it.
	Abandoned time.Time `json:"abandoned,omitzero"`
}

// abandonedFor is how long the key of an abandoned plan is kept: long past
// the time its owner, were it alive, gives a commit (2 minutes).
const abandonedFor = 24 * time.Hour

// Committer commits stored data files to a table exactly once, however a
// process dies: every commit is planned in the PlanStore first, under an id
// the table's snapshot summary then holds, and every file is claimed for
// one plan only, so that two instances (one pinned before a takeover, one
// after) never commit a file twice.
type Committer struct {
	table  *Table
	plans  PlanStore
	prefix string // of this table's plans and claims, dotted
	// Summary is added to every commit's snapshot summary: the stream and
	// consumer, for readers of the table's history.
	Summary map[string]string
	// AfterPlan, when set, runs once a plan is recorded, before its
	// commit; AfterCommit once the commit landed, before the plan is
	// marked done; BeforeRecommit before recovery commits a plan the table
	// does not hold. Crash tests use them.
	AfterPlan, AfterCommit, BeforeRecommit func()
	// CheckFile, when set, checks a file of a plan Recover found before
	// anything of the plan is committed: a plan in the store is input,
	// and the exporter checks that the file's intent names it. An error
	// wrapping ErrRefused refuses the plan; any other is the store
	// failing, and Recover returns it as it is.
	CheckFile func(ctx context.Context, f File) error
	// MaxPlanBytes bounds the encoded size of a plan, one value in the
	// PlanStore: the state bucket's values are messages, which the server
	// limits (max_payload, 1 MiB by default). Zero means
	// DefaultMaxPlanBytes. Commit refuses more files than fit: Fit tells
	// how many do.
	MaxPlanBytes int
}

// NewCommitter returns a Committer of files to table, keeping plans and
// claims in plans under prefix (a dotted key prefix ending in ".").
func NewCommitter(table *Table, plans PlanStore, prefix string) *Committer {
	return &Committer{table: table, plans: plans, prefix: prefix}
}

// The plans, done marks and claims are keys under the prefix; a done mark
// records a plan whose commit landed: recovery believes it rather than the
// table's snapshots, which expiry (jetlake's own or another tool's) may
// have removed while the plan was still kept. statekey names them.

// Commit plans files under a new id, claims each for the plan, commits the
// claimed ones in one snapshot, and returns the plan. A file claimed by
// another plan is left out: that plan commits it. The plan stays in the
// store until Forget. When the commit fails after the plan was recorded,
// Commit returns the plan with the error: Recommit it.
func (c *Committer) Commit(ctx context.Context, files []File) (*Plan, error) {
	plan := &Plan{ID: nuid.Next(), Table: c.table.Name(), Created: time.Now().UTC()}
	if n := c.Fit(files); n < len(files) {
		return nil, fmt.Errorf("commit plan of %d files is over %d bytes: commit at most %d of them at once", len(files), c.maxPlanBytes(), n)
	}
	// Refused before anything is recorded: a plan that can not commit
	// would be retried for ever.
	for _, f := range files {
		if err := c.table.CheckDataFile(f.Location); err != nil {
			return nil, fmt.Errorf("commit plan: %w", err)
		}
	}
	// Claim every file, a few requests at a time: a commit of 10,000
	// files is 20,000 round trips to the state bucket.
	mine := make([]bool, len(files))
	err := parallel(ctx, len(files), func(ctx context.Context, i int) error {
		f := files[i]
		err := c.plans.Create(ctx, statekey.Claim(c.prefix, f.Intent), []byte(plan.ID))
		if errors.Is(err, ErrExists) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("claim %s: %w", f.Location, err)
		}
		// The claim is ours, so no plan holds the file now. One may have
		// committed it and been forgotten since its intent was read: by
		// another instance that found it at a takeover, or that took over
		// while this one was cut off. A plan is forgotten only once its
		// intents are gone, so the intent tells.
		if _, err := c.plans.Get(ctx, f.Intent); errors.Is(err, ErrMissing) {
			c.plans.Delete(ctx, statekey.Claim(c.prefix, f.Intent))
			return nil
		} else if err != nil {
			c.plans.Delete(ctx, statekey.Claim(c.prefix, f.Intent))
			return fmt.Errorf("claim %s: %w", f.Location, err)
		}
		mine[i] = true
		return nil
	})
	for i, f := range files {
		if mine[i] {
			plan.Files = append(plan.Files, f)
		}
	}
	if err != nil {
		c.release(ctx, plan)
		return nil, err
	}
	if len(plan.Files) == 0 {
		return plan, nil
	}
	if err := c.record(ctx, plan); errors.Is(err, ErrAbandoned) {
		return nil, err
	} else if err != nil {
		// It may have landed: the plan is returned, and Recommit finds
		// out.
		return plan, err
	}
	if c.AfterPlan != nil {
		c.AfterPlan()
	}
	return plan, c.commit(ctx, plan)
}

// record records plan, whose files are claimed for it. When its key is
// taken, by an earlier attempt of this record or by a Recover that
// abandoned the plan, the key tells which: abandoned, the claims are
// released and the error wraps ErrAbandoned.
func (c *Committer) record(ctx context.Context, plan *Plan) error {
	value, err := json.Marshal(plan)
	if err != nil {
		return err
	}
	held, err := c.takePlanKey(ctx, plan.ID, value)
	if err != nil {
		return fmt.Errorf("record commit plan: %w", err)
	}
	if held == keyTaken || held == keyRecorded {
		return nil // recorded now, or by an earlier attempt
	}
	// Abandoned: the key holds the mark, or held it and its age let it
	// go. Either way the plan's claims may be another plan's by now.
	c.release(ctx, plan)
	return fmt.Errorf("commit plan %s: %w", plan.ID, ErrAbandoned)
}

// planKey is what a plan's key held when takePlanKey tried to create it.
type planKey int

const (
	keyTaken     planKey = iota // nothing: the value is there now
	keyRecorded                 // the plan itself
	keyAbandoned                // the mark of a Recover that abandoned the plan
	keyGone                     // something, deleted before it could be read
	keyOther                    // a value that is neither
)

// takePlanKey creates the key of plan id with value, and says what the key
// held when it existed already.
func (c *Committer) takePlanKey(ctx context.Context, id string, value []byte) (planKey, error) {
	key := statekey.Plan(c.prefix, id)
	err := c.plans.Create(ctx, key, value)
	if !errors.Is(err, ErrExists) {
		return keyTaken, err
	}
	held, err := c.plans.Get(ctx, key)
	switch {
	case errors.Is(err, ErrMissing):
		return keyGone, nil
	case err != nil:
		return keyOther, err
	}
	var p Plan
	switch {
	case json.Unmarshal(held, &p) != nil || p.ID != id:
		return keyOther, nil
	case !p.Abandoned.IsZero():
		return keyAbandoned, nil
	}
	return keyRecorded, nil
}

// release releases the claims plan holds still, so that the next plan can
// take their files: a claim that is another plan's by now is left alone.
func (c *Committer) release(ctx context.Context, plan *Plan) {
	parallel(context.WithoutCancel(ctx), len(plan.Files), func(ctx context.Context, i int) error {
		return c.plans.Release(ctx, statekey.Claim(c.prefix, plan.Files[i].Intent), []byte(plan.ID))
	})
}

// DefaultMaxPlanBytes is the default of Committer.MaxPlanBytes.
const DefaultMaxPlanBytes = 256 << 10

func (c *Committer) maxPlanBytes() int {
	if c.MaxPlanBytes > 0 {
		return c.MaxPlanBytes
	}
	return DefaultMaxPlanBytes
}

// Fit returns how many of files, from the first, one plan holds within
// MaxPlanBytes; at least one. Commit the rest in the next plans.
func (c *Committer) Fit(files []File) int {
	limit := c.maxPlanBytes()
	size := 256 // the plan's own fields
	for i, f := range files {
		// Each file's JSON: its strings (escaped, at most twice as
		// long for the characters keys may hold), two sequences, names.
		size += 2*(len(f.Location)+len(f.Intent)) + 80
		if size > limit && i > 0 {
			return i
		}
	}
	return len(files)
}

// parallelism is how many requests to the state bucket or the store a
// commit has in flight at once.
const parallelism = 16

// parallel calls fn for 0 to n-1, parallelism at a time, and returns the
// first error; after one, the calls not started yet are not made.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelism)
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	return g.Wait()
}

// Recommit commits a plan Commit returned with an error, under its own id:
// its files are claimed for it, so no other plan can take them. A plan
// whose record is not known to have landed is recorded first; one a
// Recover abandoned meanwhile makes Recommit return an error wrapping
// ErrAbandoned, and commits nothing.
func (c *Committer) Recommit(ctx context.Context, plan *Plan) error {
	if err := c.record(ctx, plan); err != nil {
		return err
	}
	return c.commit(ctx, plan)
}

// commit commits plan's files to the table under its id, then marks the
// plan done.
func (c *Committer) commit(ctx context.Context, plan *Plan) error {
	if err := c.commitFiles(ctx, plan); err != nil {
		return err
	}
	if c.AfterCommit != nil {
		c.AfterCommit()
	}
	err := c.plans.Create(ctx, statekey.Done(c.prefix, plan.ID), []byte(plan.ID))
	if err != nil && !errors.Is(err, ErrExists) {
		return fmt.Errorf("mark commit %s done: %w", plan.ID, err)
	}
	return nil
}

// commitFiles commits plan's files to the table under its id.
func (c *Committer) commitFiles(ctx context.Context, plan *Plan) error {
	locs := make([]string, len(plan.Files))
	ranges := make([]string, 0, len(plan.Files))
	for i, f := range plan.Files {
		locs[i] = f.Location
		ranges = append(ranges, strconv.FormatUint(f.First, 10)+"-"+strconv.FormatUint(f.Last, 10))
	}
	summary := map[string]string{"jetlake.files": strconv.Itoa(len(locs))}
	for k, v := range c.Summary {
		summary[k] = v
	}
	if r := strings.Join(ranges, ","); len(r) <= 4096 {
		summary["jetlake.sequence-ranges"] = r
	}
	var tails map[string]*Tail
	for _, f := range plan.Files {
		if f.Tail != nil {
			if tails == nil {
				tails = make(map[string]*Tail, len(plan.Files))
			}
			tails[f.Location] = f.Tail
		}
	}
	return c.table.Commit(ctx, Commit{ID: plan.ID, Files: locs, Summary: summary, Tails: tails})
}

// Recover commits every plan of the store that the table does not hold
// yet, under its own id, and returns every plan found: their files are in
// the table once Recover returns without error. Claims whose plan is not
// recorded are released, so their files are planned anew: the process
// that claimed them died before it recorded the plan, or it is alive and
// slow, another instance of a table several commit to. Their plan is
// abandoned first (its key taken, see Plan.Abandoned), so that its owner
// can not record it after the release: it would commit files another plan
// took. It runs when this instance becomes the one that commits (at
// start, or when it is pinned), before it plans anything.
//
// A plan to commit is checked first, every file of it, and nothing is
// committed unless all of them pass: a file outside the table's data
// folder (Table.CheckDataFile), or one CheckFile refuses, makes Recover
// return a *PlanError naming the plan's key and the file.
func (c *Committer) Recover(ctx context.Context) ([]*Plan, error) {
	entries, err := c.plans.List(ctx, c.prefix)
	if err != nil {
		return nil, fmt.Errorf("list commit plans: %w", err)
	}
	if err := c.table.Refresh(ctx); err != nil {
		return nil, err
	}
	var plans, pending []*Plan
	planned := map[string]bool{}
	now := time.Now()
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		if !strings.HasPrefix(key, statekey.Plans(c.prefix)) {
			continue
		}
		p := &Plan{}
		if err := json.Unmarshal(entries[key], p); err != nil {
			return nil, fmt.Errorf("commit plan %s: %w", key, err)
		}
		if !p.Abandoned.IsZero() && key == statekey.Plan(c.prefix, p.ID) {
			if now.Sub(p.Abandoned) > abandonedFor {
				if err := c.plans.Delete(ctx, key); err != nil {
					return nil, err
				}
			}
			continue
		}
		planned[p.ID] = true
		plans = append(plans, p)
		// Not marked done: the process died around the commit. The
		// commit, if it landed, is among the newest snapshots.
		if _, done := entries[statekey.Done(c.prefix, p.ID)]; !done && !c.table.Committed(p.ID) {
			if err := c.check(ctx, key, p); err != nil {
				return nil, err
			}
			pending = append(pending, p)
		}
	}
	for _, p := range plans {
		if _, done := entries[statekey.Done(c.prefix, p.ID)]; done {
			continue
		}
		if slices.Contains(pending, p) {
			if c.BeforeRecommit != nil {
				c.BeforeRecommit()
			}
			if err := c.commit(ctx, p); err != nil {
				return nil, err
			}
		}
		if err := c.plans.Create(ctx, statekey.Done(c.prefix, p.ID), []byte(p.ID)); err != nil && !errors.Is(err, ErrExists) {
			return nil, fmt.Errorf("mark commit %s done: %w", p.ID, err)
		}
	}
	if err := c.releaseUnplanned(ctx, entries, planned, now); err != nil {
		return nil, err
	}
	return plans, nil
}

// releaseUnplanned deletes the done marks of plans that are gone, and
// abandons the plans that hold claims but were not recorded when entries
// were listed, releasing their claims.
func (c *Committer) releaseUnplanned(ctx context.Context, entries map[string][]byte, planned map[string]bool, now time.Time) error {
	claims := map[string][]string{} // claim keys by the plan id they hold
	for key, value := range entries {
		id := string(value)
		switch {
		case planned[id] || !statekey.IsClaimOrDone(c.prefix, key):
		case strings.HasPrefix(key, statekey.Claim(c.prefix, "")):
			claims[id] = append(claims[id], key)
		default:
			if err := c.plans.Delete(ctx, key); err != nil {
				return err
			}
		}
	}
	for id, keys := range claims {
		// A value no plan id can be is released as it is: no plan key
		// can hold it.
		if validPlanID(id) {
			recorded, err := c.abandon(ctx, id, now)
			if err != nil {
				return err
			}
			if recorded {
				continue // since the listing: its owner commits it
			}
		}
		for _, key := range keys {
			if err := c.plans.Release(ctx, key, []byte(id)); err != nil {
				return err
			}
		}
	}
	return nil
}

// validPlanID reports whether id can be a plan's id, which Commit draws
// from nuid: up to 64 letters and digits.
func validPlanID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// abandon takes the key of plan id, not recorded when Recover listed the
// store, so that the plan can no longer be recorded. It reports whether
// the plan was recorded meanwhile instead (or the key holds what the
// plans' check refuses, or went again: the next Recover looks).
func (c *Committer) abandon(ctx context.Context, id string, now time.Time) (recorded bool, err error) {
	mark, err := json.Marshal(&Plan{ID: id, Table: c.table.Name(), Abandoned: now.UTC()})
	if err != nil {
		return false, err
	}
	held, err := c.takePlanKey(ctx, id, mark)
	if err != nil {
		return false, fmt.Errorf("abandon commit plan %s: %w", id, err)
	}
	return held != keyTaken && held != keyAbandoned, nil
}

// check returns a *PlanError when a file of plan p, recorded under key,
// is not one to commit.
func (c *Committer) check(ctx context.Context, key string, p *Plan) error {
	if key != statekey.Plan(c.prefix, p.ID) {
		return &PlanError{Key: key, Err: fmt.Errorf("the plan's id is %q", p.ID)}
	}
	for _, f := range p.Files {
		if err := c.table.CheckDataFile(f.Location); err != nil {
			return &PlanError{Key: key, Location: f.Location, Err: err}
		}
		if c.CheckFile == nil {
			continue
		}
		if err := c.CheckFile(ctx, f); errors.Is(err, ErrRefused) {
			return &PlanError{Key: key, Location: f.Location, Err: fmt.Errorf("file %s: %w", f.Location, err)}
		} else if err != nil {
			return fmt.Errorf("check commit plan %s: %w", key, err)
		}
	}
	return nil
}

// Forget deletes a committed plan and its claims, once the intents of its
// files are gone.
func (c *Committer) Forget(ctx context.Context, plan *Plan) error {
	err := parallel(ctx, len(plan.Files), func(ctx context.Context, i int) error {
		return c.plans.Delete(ctx, statekey.Claim(c.prefix, plan.Files[i].Intent))
	})
	if err != nil {
		return err
	}
	if err := c.plans.Delete(ctx, statekey.Plan(c.prefix, plan.ID)); err != nil {
		return err
	}
	return c.plans.Delete(ctx, statekey.Done(c.prefix, plan.ID))
}
