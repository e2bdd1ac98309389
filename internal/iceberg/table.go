package iceberg

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
)

// Config says which table to write and how to reach it. An empty
// Partitioning means an unpartitioned table.
type Config struct {
	// Catalog is the catalog's name, stored with every row of a SQL
	// catalog (the connector's name).
	Catalog string
	// Type is the kind of catalog: "sql" (the zero value), "rest" or
	// "glue".
	Type string
	// URI locates the catalog. sql: "sqlite:///path/catalog.db" or
	// "postgres://user@host:port/database"; rest: the catalog's URL; glue:
	// an endpoint other than AWS's, or empty.
	URI          string
	REST         REST
	Glue         Glue
	Namespace    string
	Table        string
	Warehouse    string // "s3://bucket/prefix": the table lives at <Warehouse>/<Namespace>/<Table>
	S3           S3
	Partitioning []config.Partition
}

// Location is where the table of cfg lives: <Warehouse>/<Namespace>/<Table>.
func (cfg Config) Location() string {
	return strings.TrimSuffix(cfg.Warehouse, "/") + "/" + cfg.Namespace + "/" + cfg.Table
}

// S3 is how the catalog's file IO reaches the warehouse.
type S3 struct {
	Endpoint        string // empty for AWS
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	TLSCAFile       string // PEM file of the authorities the endpoint's certificate is checked against; empty for the system's
}

// Table is an Iceberg table jetlake commits to. Its methods are for one
// goroutine at a time.
type Table struct {
	cat     catalog.Catalog
	close   func() error
	ident   table.Identifier
	tbl     *table.Table
	evolved Evolution
}

// CommitIDProperty is the snapshot summary property that holds a commit's
// id.
const CommitIDProperty = "jetlake.commit-id"

// SchemaIDProperty is the snapshot summary property that holds the id of
// the table's current schema when the commit was made.
const SchemaIDProperty = "jetlake.schema-id"

// tableProperties are set on the tables jetlake creates.
var tableProperties = iceberg.Properties{
	"format-version": "2",
	// Without merging, every commit leaves a manifest in the manifest
	// list: 200 commits, 200 manifests.
	"commit.manifest-merge.enabled":              "true",
	"write.metadata.delete-after-commit.enabled": "true",
	"write.metadata.previous-versions-max":       "100",
	// jetlake retries commits itself, with a fresh transaction each time.
	"commit.retry.num-retries": "0",
}

// Open opens the table of cfg, creating its namespace and the table when
// they are missing, with the schema of fields and cfg's partitioning. An
// existing table must have that schema and partitioning; Open says how it
// differs when it does not.
func Open(ctx context.Context, cfg Config, fields []formats.Field) (*Table, error) {
	schema, err := Schema(fields)
	if err != nil {
		return nil, err
	}
	spec, err := Spec(schema, cfg.Partitioning)
	if err != nil {
		return nil, err
	}
	t, err := openCatalog(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := t.open(ctx, cfg, schema, spec); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Load loads the table of cfg as it is, creating nothing; its error
// errors.Is catalog.ErrNoSuchTable when the table does not exist.
func Load(ctx context.Context, cfg Config) (*Table, error) {
	t, err := openCatalog(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if t.tbl, err = t.cat.LoadTable(ctx, t.ident); err != nil {
		t.Close()
		return nil, fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	return t, nil
}

// ErrNoSuchTable is returned, wrapped, by Load for a table that does not
// exist.
var ErrNoSuchTable = catalog.ErrNoSuchTable

func (t *Table) open(ctx context.Context, cfg Config, schema *iceberg.Schema, spec iceberg.PartitionSpec) error {
	ns := table.Identifier{cfg.Namespace}
	exists, err := t.cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return fmt.Errorf("iceberg namespace %s: %w", cfg.Namespace, err)
	}
	if !exists {
		if err := t.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return fmt.Errorf("iceberg namespace %s: %w", cfg.Namespace, err)
		}
	}
	location := cfg.Location()
	tbl, err := t.cat.LoadTable(ctx, t.ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		tbl, err = t.cat.CreateTable(ctx, t.ident, schema,
			catalog.WithLocation(location), catalog.WithPartitionSpec(&spec), catalog.WithProperties(tableProperties))
		if errors.Is(err, catalog.ErrTableAlreadyExists) {
			tbl, err = t.cat.LoadTable(ctx, t.ident)
		}
	}
	if err != nil {
		return fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	t.tbl = tbl
	if err := checkLocation(tbl.Location(), location); err != nil {
		return err
	}
	// Columns the connector gained are added. Another instance may change
	// the schema at the same moment: then the table is loaded again and
	// compared anew.
	for attempt := 0; ; attempt++ {
		ev := Evolve(t.tbl.Schema(), t.tbl.Spec(), schema, spec)
		if len(ev.Refused) > 0 {
			return &MismatchError{Diffs: ev.Refused}
		}
		if ev.Empty() {
			return nil
		}
		evolved, err := evolve(ctx, t.tbl, ev)
		if err == nil {
			t.tbl, t.evolved = evolved, ev
			continue
		}
		if attempt == maxCommitAttempts-1 {
			return fmt.Errorf("iceberg table %s: %w", t.Name(), err)
		}
		if t.tbl, err = t.cat.LoadTable(ctx, t.ident); err != nil {
			return fmt.Errorf("iceberg table %s: %w", t.Name(), err)
		}
	}
}

// checkLocation returns a *MismatchError when a table at have is not at
// want: data files are stored under the connector's [s3] bucket and
// prefix, and a table elsewhere would hold files outside its folder.
func checkLocation(have, want string) error {
	if have = strings.TrimSuffix(have, "/"); have != strings.TrimSuffix(want, "/") {
		return &MismatchError{Diffs: []string{fmt.Sprintf("the table is at %s, not at %s where the connector writes its data files; set [s3] bucket and prefix to the table's warehouse", have, want)}}
	}
	return nil
}

// MismatchError reports a table whose schema or partitioning is not what
// the connector writes. Waiting does not fix it.
type MismatchError struct {
	Diffs []string
}

func (e *MismatchError) Error() string {
	return "the table does not fit the connector: " + strings.Join(e.Diffs, "; ")
}

// specFields describes a spec's fields as "transform(column)".
func specFields(schema *iceberg.Schema, spec iceberg.PartitionSpec) []string {
	var out []string
	for _, f := range spec.Fields() {
		col := "?"
		if len(f.SourceIDs) > 0 {
			if sf, ok := schema.FindFieldByID(f.SourceIDs[0]); ok {
				col = sf.Name
			}
		}
		out = append(out, fmt.Sprintf("%s(%s)", f.Transform, col))
	}
	return out
}

// Name is the table's namespace and name, dotted.
func (t *Table) Name() string { return strings.Join(t.ident, ".") }

// Fits returns how the table's schema would change for a connector writing
// fields with partitioning (Open makes the change), or a *MismatchError
// with the changes jetlake refuses.
func (t *Table) Fits(fields []formats.Field, partitioning []config.Partition) (Evolution, error) {
	schema, err := Schema(fields)
	if err != nil {
		return Evolution{}, err
	}
	spec, err := Spec(schema, partitioning)
	if err != nil {
		return Evolution{}, err
	}
	ev := Evolve(t.tbl.Schema(), t.tbl.Spec(), schema, spec)
	if len(ev.Refused) > 0 {
		return ev, &MismatchError{Diffs: ev.Refused}
	}
	return ev, nil
}

// Partitioner returns the Partitioner of the table's current spec.
func (t *Table) Partitioner(columns []string) (*Partitioner, error) {
	return NewPartitioner(t.tbl.Schema(), t.tbl.Spec(), columns)
}

// Location is the table's base location.
func (t *Table) Location() string { return t.tbl.Location() }

// Close releases the catalog's connections.
func (t *Table) Close() error { return t.close() }

// Commit is one append to the table: data files already stored, and the
// id that makes committing them again harmless.
type Commit struct {
	ID      string
	Files   []string          // locations of the data files, under the table's location
	Summary map[string]string // more snapshot summary properties
	// Tails holds the ends of some of the files, by location: their
	// statistics are read from there rather than from the store.
	Tails map[string]*Tail
}

// maxCommitAttempts bounds how often a commit is tried when another writer
// keeps committing first or the catalog fails.
const maxCommitAttempts = 8

// Commit appends c's files to the table in one snapshot whose summary holds
// c.ID. It owns the retries: each attempt starts from the table as it is
// now, and first looks for c.ID in the current snapshot and its ancestors,
// so that an attempt that landed though its answer was lost is never
// repeated. A conflict with another writer ("branch main has changed") and
// an unknown outcome are retried with backoff.
//
// Every file must lie under the table's data folder (CheckDataFile): a
// commit naming another is refused with a *LocationError before anything
// is read or committed.
func (t *Table) Commit(ctx context.Context, c Commit) error {
	if c.ID == "" {
		return errors.New("iceberg commit without an id")
	}
	for _, loc := range c.Files {
		if err := t.CheckDataFile(loc); err != nil {
			return fmt.Errorf("iceberg commit %s to %s: %w", c.ID, t.Name(), err)
		}
	}
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return err
	}
	// Each file's statistics come from its footer in the store: read
	// them a few at a time.
	files := make([]iceberg.DataFile, len(c.Files))
	err = parallel(ctx, len(c.Files), func(ctx context.Context, i int) error {
		if tail := c.Tails[c.Files[i]]; tail != nil {
			df, err := dataFile(ctx, tailIO{c.Files[i], tail}, c.Files[i], t.tbl.Schema(), t.tbl.Spec(), t.tbl.Properties(), t.tbl.Location())
			if err == nil {
				files[i] = df
				return nil
			}
			// A tail that does not hold the whole footer: read the store.
		}
		df, err := dataFile(ctx, fs, c.Files[i], t.tbl.Schema(), t.tbl.Spec(), t.tbl.Properties(), t.tbl.Location())
		if err != nil {
			return fmt.Errorf("data file %s: %w", c.Files[i], err)
		}
		files[i] = df
		return nil
	})
	if err != nil {
		return err
	}
	props := iceberg.Properties{}
	for k, v := range c.Summary {
		props[k] = v
	}
	props[CommitIDProperty] = c.ID
	props[SchemaIDProperty] = strconv.Itoa(t.tbl.Schema().ID)
	err = t.retry(ctx, func() bool { return t.Committed(c.ID) }, func(tx *table.Transaction) error {
		return tx.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck())
	})
	if err != nil {
		return fmt.Errorf("iceberg commit %s to %s: %w", c.ID, t.Name(), err)
	}
	return nil
}

// LocationError reports a data file that does not lie under the table's
// data folder. Waiting does not mend it.
type LocationError struct {
	Location string
	DataDir  string // the table's data folder, "<location>/data/"
}

func (e *LocationError) Error() string {
	return fmt.Sprintf("data file %s is not under the table's data folder %s", e.Location, e.DataDir)
}

// CheckDataFile returns a *LocationError unless loc names a file under the
// table's data folder, "<location>/data/": in the table's bucket, with no
// empty, "." or ".." segment after it. What jetlake reads back from the
// state bucket names its files; only these may be committed.
func (t *Table) CheckDataFile(loc string) error { return checkDataFile(t.tbl.Location(), loc) }

func checkDataFile(tableLoc, loc string) error {
	dataDir := strings.TrimSuffix(tableLoc, "/") + "/data/"
	if !under(dataDir, loc) {
		return &LocationError{Location: loc, DataDir: dataDir}
	}
	return nil
}

// under reports whether loc names a file under dir, which ends in "/":
// loc starts with dir, scheme and bucket included, and has no empty, "."
// or ".." segment after it. Object keys are opaque to S3, but not to every
// reader: a ".." segment may leave the folder where a reader resolves
// paths.
func under(dir, loc string) bool {
	rest, ok := strings.CutPrefix(loc, dir)
	if !ok {
		return false
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// errStop wraps an error that ends retry at once.
type errStop struct{ err error }

func (e errStop) Error() string { return e.err.Error() }
func (e errStop) Unwrap() error { return e.err }

// retry makes one change to the table, trying up to maxCommitAttempts
// times with backoff, each attempt with a fresh transaction on the table as
// it is then: a conflict with another writer ("branch main has changed")
// and an unknown outcome are tried again; an error of change wrapped in
// errStop is not. Before each attempt, landed reports whether the change is
// in the table already (an attempt that landed though its answer was lost).
func (t *Table) retry(ctx context.Context, landed func() bool, change func(*table.Transaction) error) error {
	var last error
	for attempt := range maxCommitAttempts {
		if attempt > 0 {
			wait := time.Duration(50<<min(attempt, 6))*time.Millisecond + rand.N(50*time.Millisecond)
			select {
			case <-ctx.Done():
				return errors.Join(ctx.Err(), last)
			case <-time.After(wait):
			}
			if err := t.tbl.Refresh(ctx); err != nil {
				last = err
				continue
			}
		}
		if landed() {
			return nil
		}
		tx := t.tbl.NewTransaction()
		if err := change(tx); err != nil {
			var stop errStop
			if errors.As(err, &stop) {
				return stop.err
			}
			// The transaction is spent; the next attempt takes a fresh one.
			last = err
			continue
		}
		tbl, err := tx.Commit(ctx)
		if err == nil {
			t.tbl = tbl
			return nil
		}
		last = err
	}
	return fmt.Errorf("%d attempts: %w", maxCommitAttempts, last)
}

// Committed reports whether the current snapshot or one of its ancestors,
// as last loaded, was committed with id.
func (t *Table) Committed(id string) bool {
	_, ok := t.CommitSummary(id)
	return ok
}

// CommitSummary returns the snapshot summary of the commit with id, among
// the current snapshot and its ancestors as last loaded.
func (t *Table) CommitSummary(id string) (map[string]string, bool) {
	return t.summaryWith(CommitIDProperty, id)
}

// summaryWith returns the summary of the current snapshot or the nearest
// ancestor whose summary property key is value.
func (t *Table) summaryWith(key, value string) (map[string]string, bool) {
	meta := t.tbl.Metadata()
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return nil, false
	}
	for _, s := range table.AncestorsOf(cur.SnapshotID, meta.SnapshotByID) {
		if s.Summary != nil && s.Summary.Properties[key] == value {
			return s.Summary.Properties, true
		}
	}
	return nil, false
}

// Refresh loads the table as the catalog has it now.
func (t *Table) Refresh(ctx context.Context) error { return t.tbl.Refresh(ctx) }

// Snapshots returns the number of snapshots in the table's metadata.
func (t *Table) Snapshots() int { return len(t.tbl.Metadata().Snapshots()) }

// Files returns the locations of the data files of the current snapshot.
func (t *Table) Files(ctx context.Context) ([]string, error) {
	cur := t.tbl.CurrentSnapshot()
	if cur == nil {
		return nil, nil
	}
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := cur.Manifests(fs)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out = append(out, e.DataFile().FilePath())
		}
	}
	return out, nil
}

// ExpireSnapshots removes the snapshots older than olderThan beyond the
// newest retainLast (at least 1), and the files only they referenced:
// manifests, manifest lists, and the data files compaction replaced (no
// intent names those: compaction takes only files whose plans are
// forgotten). It returns how many snapshots it removed. Recovery does not
// need them: a plan whose commit landed is marked done in the state
// bucket.
//
// Only files inside the table's location are removed (see fencedIO): the
// manifests name the files, and a manifest naming another is refused with
// an *OutsideTableError and the file is left in place. When the snapshots
// are expired but some of their files were not removed, it returns how
// many it removed and an error that counts the refused files and names
// the first.
func (t *Table) ExpireSnapshots(ctx context.Context, retainLast int, olderThan time.Duration) (int, error) {
	before := len(t.tbl.Metadata().Snapshots())
	tx := t.tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(max(retainLast, 1)), table.WithOlderThan(olderThan)); err != nil {
		return 0, fmt.Errorf("expire snapshots of %s: %w", t.Name(), err)
	}
	tbl, err := tx.Commit(ctx)
	if tbl == nil {
		return 0, fmt.Errorf("expire snapshots of %s: %w", t.Name(), err)
	}
	// The commit landed; err is of the removals after it.
	t.tbl = tbl
	removed := before - len(tbl.Metadata().Snapshots())
	if err != nil {
		return removed, fmt.Errorf("expire snapshots of %s: %d expired, but not all of their files were removed: %w", t.Name(), removed, removalErrors(err))
	}
	return removed, nil
}

// removalErrors returns the joined errors of removals as one error on one
// line, with the files refused as outside the table's location counted
// rather than listed (a forged manifest may name thousands). It unwraps
// to the first *OutsideTableError.
func removalErrors(err error) error {
	var refused []*OutsideTableError
	var others []error
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if o := (*OutsideTableError)(nil); errors.As(err, &o) {
			refused = append(refused, o)
			return
		}
		others = append(others, err)
	}
	walk(err)
	if len(refused) > 1 {
		others = append([]error{fmt.Errorf("%w (and %d more files outside it, left in place)", refused[0], len(refused)-1)}, others...)
	} else if len(refused) == 1 {
		others = append([]error{refused[0]}, others...)
	}
	return &OneLineError{Err: errors.Join(others...)}
}

// ExpiryDue reports whether ExpireSnapshots(retainLast, olderThan) would
// remove a snapshot at now, as the table was last loaded.
func (t *Table) ExpiryDue(retainLast int, olderThan time.Duration, now time.Time) bool {
	snaps := t.tbl.Metadata().Snapshots()
	if len(snaps) <= max(retainLast, 1) {
		return false
	}
	cutoff := now.Add(-olderThan).UnixMilli()
	for _, s := range snaps {
		if s.TimestampMs < cutoff {
			return true
		}
	}
	return false
}
