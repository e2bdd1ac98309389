package iceberg_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
)

// memPlans is an in-memory PlanStore.
type memPlans struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newMemPlans() *memPlans { return &memPlans{m: map[string][]byte{}} }

func (s *memPlans) Create(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; ok {
		return iceberg.ErrExists
	}
	s.m[key] = value
	return nil
}

func (s *memPlans) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok {
		return nil, iceberg.ErrMissing
	}
	return v, nil
}

func (s *memPlans) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

func (s *memPlans) Release(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[key]; ok && bytes.Equal(v, value) {
		delete(s.m, key)
	}
	return nil
}

func (s *memPlans) List(_ context.Context, prefix string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range s.m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out, nil
}

// intents records the intents of files in plans, the bucket they share in
// production.
func (s *memPlans) intents(files []iceberg.File) {
	for _, f := range files {
		s.Create(context.Background(), f.Intent, []byte("{}"))
	}
}

// files writes n data files of ten sequences each, from sequence 1.
func (e *tableEnv) files(tbl *iceberg.Table, n int) []iceberg.File {
	hour := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	var out []iceberg.File
	for i := range n {
		first := uint64(i*10 + 1)
		loc := e.file(tbl, []string{"s.a", "s.b"}[i%2], hour, first, first+9)
		out = append(out, iceberg.File{Location: loc, Intent: "intent.c.S.c.i" + loc[len(loc)-20:], First: first, Last: first + 9})
	}
	return out
}

// Each point a committing process can die at, and what recovery in the next
// one makes of it: every file in the table once.
func TestCommitsSurviveACrashAtEachStep(t *testing.T) {
	catalogs(t, func(t *testing.T, e *tableEnv) {
		ctx := context.Background()
		plans := newMemPlans()
		tbl := e.open()
		files := e.files(tbl, 6)
		plans.intents(files)

		// 1. Died after the plan was recorded, before the commit.
		p1 := &iceberg.Plan{ID: "plan-1", Table: tbl.Name(), Files: files[:2]}
		value, _ := json.Marshal(p1)
		plans.Create(ctx, "t.plan.plan-1", value)
		// 2. Died after the commit, before forgetting the plan.
		c := iceberg.NewCommitter(tbl, plans, "t.")
		if _, err := c.Commit(ctx, files[2:4]); err != nil {
			t.Fatal(err)
		}
		// 3. Died between claiming a file and recording its plan.
		plans.Create(ctx, "t.claim."+strings.ReplaceAll(files[4].Intent, ".", "_"), []byte("never-recorded"))

		// The next process.
		c = iceberg.NewCommitter(e.open(), plans, "t.")
		got, err := c.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("recovery found %d plans, want 2", len(got))
		}
		// Recovering again changes nothing.
		if _, err := c.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		// The files no plan holds, the released claim's among them, are
		// planned anew.
		p3, err := c.Commit(ctx, files[4:])
		if err != nil {
			t.Fatal(err)
		}
		if len(p3.Files) != 2 {
			t.Fatalf("the new plan holds %d files, want 2", len(p3.Files))
		}
		e.read(60, 3)
		for _, p := range append(got, p3) {
			if err := c.Forget(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if left, _ := plans.List(ctx, "t."); len(left) != 0 {
			t.Fatalf("%d plans and claims left after Forget: %v", len(left), left)
		}
	})
}

// Two instances handed the same files (one pinned before a takeover, one
// after) commit each file once: a file belongs to the plan that claimed it.
func TestTwoCommittersNeverCommitAFileTwice(t *testing.T) {
	e := newTableEnv(t, "sqlite")
	ctx := context.Background()
	plans := newMemPlans()
	files := e.files(e.open(), 8)
	plans.intents(files)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		c := iceberg.NewCommitter(e.open(), plans, "t.")
		wg.Go(func() {
			_, err := c.Commit(ctx, files)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	tr, err := icebergtest.Read(e.db, e.postgres, e.cfg.Catalog, e.cfg.Namespace, e.cfg.Table, icebergtest.MinIOGet(e.mc, e.bucket))
	if err != nil {
		t.Fatal(err)
	}
	if problems := tr.Check(80); len(problems) > 0 || tr.Snapshots < 1 || tr.Snapshots > 2 {
		t.Fatalf("%d snapshots and %d problems: %v", tr.Snapshots, len(problems), problems)
	}
}

// A commit that fails once its plan is recorded is tried again under the
// plan's id: its files stay claimed for it, and no other plan takes them.
func TestAFailedCommitIsRecommittedUnderItsPlan(t *testing.T) {
	e := newTableEnv(t, "sqlite")
	plans := newMemPlans()
	tbl := e.open()
	files := e.files(tbl, 4)
	plans.intents(files)
	c := iceberg.NewCommitter(tbl, plans, "t.")
	ctx, cancel := context.WithCancel(context.Background())
	c.AfterPlan = cancel // the catalog becomes unreachable once the plan is recorded
	plan, err := c.Commit(ctx, files)
	if err == nil || plan == nil || len(plan.Files) != 4 {
		t.Fatalf("Commit = %v, %v; want the recorded plan and an error", plan, err)
	}
	c.AfterPlan = nil
	// The same files offered to a new plan are not taken: they are the
	// failed plan's.
	other, err := c.Commit(context.Background(), files)
	if err != nil || len(other.Files) != 0 {
		t.Fatalf("a second plan took %d files (%v)", len(other.Files), err)
	}
	if err := c.Recommit(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	e.read(40, 1)
}

// A plan in the store is input: recovery commits nothing while one plan it
// would commit names a file outside the table's data folder or one
// CheckFile refuses, and says which plan; a CheckFile that fails for
// another reason is the store failing, not a refusal. Once the plan is
// deleted, the others are committed.
func TestRecoveryCommitsNothingWhileAPlanIsRefused(t *testing.T) {
	e := newTableEnv(t, "sqlite")
	plans := newMemPlans()
	tbl := e.open()
	files := e.files(tbl, 3)
	plans.intents(files[:2])
	c := iceberg.NewCommitter(tbl, plans, "t.")
	ctx, cancel := context.WithCancel(context.Background())
	c.AfterPlan = cancel // recorded, not committed
	if plan, err := c.Commit(ctx, files[:2]); err == nil || plan == nil {
		t.Fatalf("Commit = %v, %v; want a recorded plan and an error", plan, err)
	}
	snapshots := func() int {
		tr, err := icebergtest.Read(e.db, false, e.cfg.Catalog, e.cfg.Namespace, e.cfg.Table, icebergtest.MinIOGet(e.mc, e.bucket))
		if err != nil {
			t.Fatal(err)
		}
		return tr.Snapshots
	}
	forge := func(f iceberg.File) {
		value, err := json.Marshal(iceberg.Plan{ID: "forged", Table: "lake.events", Files: []iceberg.File{f}})
		if err != nil {
			t.Fatal(err)
		}
		plans.Delete(context.Background(), "t.plan.forged")
		if err := plans.Create(context.Background(), "t.plan.forged", value); err != nil {
			t.Fatal(err)
		}
	}
	known := func(_ context.Context, f iceberg.File) error {
		if _, err := plans.Get(context.Background(), f.Intent); err != nil {
			return fmt.Errorf("%w: no intent %s", iceberg.ErrRefused, f.Intent)
		}
		return nil
	}
	storeDown := errors.New("state bucket unreachable")
	for _, tc := range []struct {
		name      string
		file      iceberg.File
		check     func(context.Context, iceberg.File) error
		refused   bool
		mentioned string
	}{
		{"outside the data folder", iceberg.File{Location: "s3://lake/hr/salaries.parquet", Intent: "intent.x"}, nil, true, "s3://lake/hr/salaries.parquet"},
		{"through ..", iceberg.File{Location: tbl.Location() + "/data/../../x.parquet", Intent: "intent.x"}, nil, true, "/data/../../x.parquet"},
		{"a data file no intent names", iceberg.File{Location: files[2].Location, Intent: files[2].Intent}, known, true, files[2].Intent},
		{"the store failing", iceberg.File{Location: files[2].Location, Intent: files[2].Intent}, func(context.Context, iceberg.File) error { return storeDown }, false, storeDown.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forge(tc.file)
			c := iceberg.NewCommitter(e.open(), plans, "t.")
			c.CheckFile = tc.check
			_, err := c.Recover(context.Background())
			var pe *iceberg.PlanError
			switch {
			case err == nil:
				t.Fatal("the plan was recovered")
			case tc.refused && (!errors.As(err, &pe) || pe.Key != "t.plan.forged" || pe.Location != tc.file.Location):
				t.Fatalf("%v, want a *PlanError naming t.plan.forged and %s", err, tc.file.Location)
			case !tc.refused && errors.As(err, &pe):
				t.Fatalf("%v: a failing store refused the plan", err)
			case !strings.Contains(err.Error(), tc.mentioned):
				t.Fatalf("%v does not say %s", err, tc.mentioned)
			}
			if n := snapshots(); n != 0 {
				t.Fatalf("%d snapshots: something was committed", n)
			}
		})
	}
	plans.Delete(context.Background(), "t.plan.forged")
	c = iceberg.NewCommitter(e.open(), plans, "t.")
	c.CheckFile = known
	if _, err := c.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.read(20, 1)
}

// Snapshot expiry (jetlake's own, or another tool's) may remove the
// snapshots of commits whose plans the state bucket still keeps; recovery
// recommits none of them, and still finds a commit the process died before
// marking done.
func TestRecoveryIsExactlyOnceAfterSnapshotExpiry(t *testing.T) {
	catalogs(t, func(t *testing.T, e *tableEnv) {
		ctx := context.Background()
		plans := newMemPlans()
		tbl := e.open()
		files := e.files(tbl, 6)
		plans.intents(files)
		c := iceberg.NewCommitter(tbl, plans, "t.")
		for i := range 2 {
			if _, err := c.Commit(ctx, files[2*i:2*i+2]); err != nil {
				t.Fatal(err)
			}
		}
		// The third commit lands, and the process dies before marking it
		// done.
		died := errors.New("died")
		c.AfterCommit = func() { panic(died) }
		func() {
			defer func() {
				if r := recover(); r != died {
					panic(r)
				}
			}()
			c.Commit(ctx, files[4:])
		}()
		// Only the newest snapshot is kept.
		other := e.open()
		removed, err := other.ExpireSnapshots(ctx, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if removed != 2 || other.Snapshots() != 1 {
			t.Fatalf("expiry removed %d snapshots and kept %d, want 2 and 1", removed, other.Snapshots())
		}
		// The next process.
		c = iceberg.NewCommitter(e.open(), plans, "t.")
		got, err := c.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("recovery found %d plans, want 3", len(got))
		}
		e.read(60, 1)
	})
}

// Compaction at the table level, with each catalog: the small files of a
// closed partition become one, sorted by sequence, in one replace that a
// data commit racing it does not undo; the same group again finds its own
// replace in the table.
func TestCompactionReplacesSmallFilesOnce(t *testing.T) {
	catalogs(t, func(t *testing.T, e *tableEnv) {
		ctx := context.Background()
		tbl := e.open()
		hour := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
		var files []string
		for i := range 6 {
			first := uint64(i*10 + 1)
			files = append(files, e.file(tbl, "s.a", hour, first, first+9))
		}
		if err := tbl.Commit(ctx, iceberg.Commit{ID: "data", Files: files}); err != nil {
			t.Fatal(err)
		}
		groups, err := tbl.CompactionGroups(ctx, iceberg.CompactOptions{TargetSize: 8 << 20, ClosedBefore: hour.Add(3 * time.Hour)})
		if err != nil || len(groups) != 1 || len(groups[0].Files) != 6 {
			t.Fatalf("groups %+v, %v; want one of 6 files", groups, err)
		}
		c, err := tbl.Rewrite(ctx, groups[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Seqs) != 60 || c.Seqs[0] != 1 || c.Seqs[59] != 60 {
			t.Fatalf("compacted file holds %d sequences, %v", len(c.Seqs), c.Seqs[:min(5, len(c.Seqs))])
		}
		key := strings.TrimPrefix(c.Location, "s3://"+e.bucket+"/")
		if _, err := e.mc.PutObject(ctx, e.bucket, key, bytes.NewReader(c.Body), int64(len(c.Body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		// Another writer commits a file of another partition first.
		other := e.open()
		if err := other.Commit(ctx, iceberg.Commit{ID: "racing", Files: []string{e.file(other, "s.b", hour, 61, 70)}}); err != nil {
			t.Fatal(err)
		}
		if err := tbl.Replace(ctx, groups[0], c.Location); err != nil {
			t.Fatal(err)
		}
		if err := tbl.Replace(ctx, groups[0], c.Location); err != nil {
			t.Fatalf("the same replace again: %v", err)
		}
		tr := e.read(70, 3)
		if len(tr.Files) != 2 {
			t.Fatalf("%d files after compaction, want the compacted one and the racing one", len(tr.Files))
		}
	})
}

// A file another instance committed meanwhile, and whose plan it then
// forgot, is not committed again: once the claim is ours, the intent must
// still be there.
func TestAFileCommittedAndForgottenMeanwhileIsLeftOut(t *testing.T) {
	e := newTableEnv(t, "sqlite")
	ctx := context.Background()
	plans := newMemPlans()
	tbl := e.open()
	files := e.files(tbl, 4)
	plans.intents(files)
	// The other instance commits the first two, then forgets them: their
	// intents go first, then the plan and its claims.
	other := iceberg.NewCommitter(e.open(), plans, "t.")
	p, err := other.Commit(ctx, files[:2])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p.Files {
		plans.Delete(ctx, f.Intent)
	}
	if err := other.Forget(ctx, p); err != nil {
		t.Fatal(err)
	}
	// This instance read all four intents before that (it found them at a
	// takeover, or stored the files before its link froze).
	got, err := iceberg.NewCommitter(tbl, plans, "t.").Commit(ctx, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != 2 || got.Files[0].Location != files[2].Location {
		t.Fatalf("committed %d files, want the 2 whose intents are left", len(got.Files))
	}
	e.read(40, 2)
}

// racingPlans runs before, once, when the first plan is about to be
// recorded: between the claims of a plan and its record.
type racingPlans struct {
	*memPlans
	before func()
	once   sync.Once
	// lost, when set, makes the first record land and report an error,
	// as a request whose reply never came.
	lost bool
}

func (s *racingPlans) Create(ctx context.Context, key string, value []byte) error {
	if !strings.HasPrefix(key, "t.plan.") {
		return s.memPlans.Create(ctx, key, value)
	}
	first := false
	s.once.Do(func() {
		first = true
		if s.before != nil {
			s.before()
		}
	})
	err := s.memPlans.Create(ctx, key, value)
	if first && s.lost && err == nil {
		return errors.New("nats: timeout")
	}
	return err
}

// Another instance recovers (it starts, or it is pinned, while this one
// is only slow) between this instance's claims and its plan's record: it
// releases the claims of the plan it can not find, and plans the files
// itself. This instance's plan is then abandoned, not recorded: each file
// is in the table once.
func TestARecoveryBetweenClaimsAndRecordNeverDoublesAFile(t *testing.T) {
	e := newTableEnv(t, "sqlite")
	ctx := context.Background()
	plans := newMemPlans()
	tbl := e.open()
	files := e.files(tbl, 4)
	plans.intents(files)
	racing := &racingPlans{memPlans: plans}
	racing.before = func() {
		other := iceberg.NewCommitter(e.open(), plans, "t.")
		if _, err := other.Recover(ctx); err != nil {
			t.Error(err)
		}
		if p, err := other.Commit(ctx, files); err != nil || len(p.Files) != 4 {
			t.Errorf("the other instance committed %v: %v", p, err)
		}
	}
	c := iceberg.NewCommitter(tbl, racing, "t.")
	p, err := c.Commit(ctx, files)
	if !errors.Is(err, iceberg.ErrAbandoned) || p != nil {
		t.Fatalf("Commit = %v, %v; want no plan and ErrAbandoned", p, err)
	}
	e.read(40, 1)
	// Offered again, the files are another plan's: none is taken.
	again, err := c.Commit(ctx, files)
	if err != nil || len(again.Files) != 0 {
		t.Fatalf("a plan after the abandon took %v: %v", again, err)
	}
	// The abandoned plan's key stays, marked, and recovery passes it by.
	if _, err := iceberg.NewCommitter(e.open(), plans, "t.").Recover(ctx); err != nil {
		t.Fatal(err)
	}
	e.read(40, 1)
}

// A plan's record that lands but whose reply is lost: the plan comes back
// with the error, and Recommit finds it recorded and commits it, once. A
// recovery meanwhile finds it recorded and leaves its claims alone.
func TestAPlanWhoseRecordReplyIsLostIsCommittedOnce(t *testing.T) {
	e := newTableEnv(t, "sqlite")
	ctx := context.Background()
	plans := newMemPlans()
	tbl := e.open()
	files := e.files(tbl, 4)
	plans.intents(files)
	c := iceberg.NewCommitter(tbl, &racingPlans{memPlans: plans, lost: true}, "t.")
	p, err := c.Commit(ctx, files)
	if err == nil || p == nil || len(p.Files) != 4 {
		t.Fatalf("Commit = %v, %v; want the plan and an error", p, err)
	}
	other := iceberg.NewCommitter(e.open(), plans, "t.")
	recovered, err := other.Recover(ctx)
	if err != nil || len(recovered) != 1 {
		t.Fatalf("recovery found %d plans: %v", len(recovered), err)
	}
	if q, err := other.Commit(ctx, files); err != nil || len(q.Files) != 0 {
		t.Fatalf("the other instance took %v: %v", q, err)
	}
	if err := c.Recommit(ctx, p); err != nil {
		t.Fatal(err)
	}
	e.read(40, 1)
}
