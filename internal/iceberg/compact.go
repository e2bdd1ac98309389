package iceberg

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"

	"github.com/jetlake/jetlake/pathtemplate"
)

// CompactionIDProperty is the snapshot summary property that holds a
// compaction's id: the same group of files always gets the same id, so that
// a compaction tried again after a crash is found in the table.
const CompactionIDProperty = "jetlake.compaction-id"

// CompactOptions choose the data files to compact.
type CompactOptions struct {
	// TargetSize is the size of a compacted file; files under half of it
	// are small.
	TargetSize int64
	// ClosedBefore closes a partition whose newest row is older: no data
	// file is added to it any more, normally.
	ClosedBefore time.Time
	// Exclude are locations not to touch: files whose intents may still
	// exist (their commit plans are kept).
	Exclude map[string]bool
}

// CompactGroup is small data files of one closed partition that become one.
type CompactGroup struct {
	Partition string   // the folder under data/, such as timestamp_hour=2026-12-01-07/subject=orders
	Files     []string // locations, by first sequence
	Bytes     int64    // their size in all
	Rows      int64
}

// ID is the group's compaction id, the same for the same files.
func (g CompactGroup) ID() string {
	h := sha256.New()
	for _, f := range g.Files {
		io.WriteString(h, f)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// fileInfo is what the manifests say of a data file.
type fileInfo struct {
	loc          string
	size, rows   int64
	first, newTs int64 // lowest sequence; newest row's time, unix µs (0: unknown)
}

// Upkeep is how much a table needs compaction.
type Upkeep struct {
	DataFiles  int // in the current snapshot
	SmallFiles int // of those, under half the target size
	// Compactable are the small files of closed partitions, in groups of
	// two at least; OldestClosed is how long the oldest of those partitions
	// has been closed.
	Compactable  int
	OldestClosed time.Duration
	// MetadataBytes is the size of the current metadata file, which holds
	// every snapshot kept.
	MetadataBytes int64
	// DeleteFiles are the delete files (another engine's row deletes) in
	// the current snapshot; while there are any, nothing is compacted.
	DeleteFiles int
}

// CompactionGroups returns the groups of small data files of closed
// partitions in the current snapshot: per partition, small files by first
// sequence, cut so that a group holds at most TargetSize bytes; a group
// holds two files at least.
func (t *Table) CompactionGroups(ctx context.Context, o CompactOptions) ([]CompactGroup, error) {
	groups, _, err := t.compactionGroups(ctx, o)
	return groups, err
}

// Upkeep reports how much the table needs compaction, and the size of its
// metadata.
func (t *Table) Upkeep(ctx context.Context, o CompactOptions) (Upkeep, error) {
	_, u, err := t.Survey(ctx, o)
	return u, err
}

// Survey returns both what CompactionGroups and what Upkeep return, from
// one read of the current snapshot's manifests: what a compaction pass
// plans from.
func (t *Table) Survey(ctx context.Context, o CompactOptions) ([]CompactGroup, Upkeep, error) {
	groups, u, err := t.compactionGroups(ctx, o)
	if err != nil {
		return nil, u, err
	}
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return nil, u, err
	}
	f, err := fs.Open(t.tbl.MetadataLocation())
	if err != nil {
		return nil, u, fmt.Errorf("metadata file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, u, fmt.Errorf("metadata file: %w", err)
	}
	u.MetadataBytes = st.Size()
	return groups, u, nil
}

// compactionGroups returns the compaction groups of the current snapshot
// and the upkeep counts found on the way; on an error, the counts so far.
func (t *Table) compactionGroups(ctx context.Context, o CompactOptions) ([]CompactGroup, Upkeep, error) {
	var u Upkeep
	cur := t.tbl.CurrentSnapshot()
	if cur == nil || o.TargetSize <= 0 {
		return nil, u, nil
	}
	byPart, err := t.smallFilesByPartition(ctx, cur, o, &u)
	if err != nil {
		return nil, u, err
	}
	if u.DeleteFiles > 0 {
		// jetlake compacts only tables whose rows nobody deleted.
		u.Compactable = 0
		return nil, u, nil
	}
	closedBefore := o.ClosedBefore.UnixMicro()
	var groups []CompactGroup
	for _, part := range slices.Sorted(maps.Keys(byPart)) {
		files := byPart[part]
		newest, closed := closedSince(files, closedBefore)
		if !closed {
			continue // still open, or of unknown age
		}
		if len(files) >= 2 {
			u.Compactable += len(files)
			u.OldestClosed = max(u.OldestClosed, time.Duration(closedBefore-newest)*time.Microsecond)
		}
		groups = append(groups, cutGroups(part, files, o.TargetSize)...)
	}
	return groups, u, nil
}

// smallFilesByPartition reads the manifests of snapshot cur: it counts the
// data, small and delete files into u, and returns the small data files
// that may be compacted (under the table's data folder, not excluded) by
// partition folder.
func (t *Table) smallFilesByPartition(ctx context.Context, cur *table.Snapshot, o CompactOptions, u *Upkeep) (map[string][]fileInfo, error) {
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	schema := t.tbl.Schema()
	seqField, _ := schema.FindFieldByName("sequence")
	tsField, _ := schema.FindFieldByName("timestamp")
	manifests, err := cur.Manifests(fs)
	if err != nil {
		return nil, err
	}
	dataDir := strings.TrimSuffix(t.tbl.Location(), "/") + "/data/"
	byPart := map[string][]fileInfo{}
	for _, m := range manifests {
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return nil, err
		}
		if m.ManifestContent() != iceberg.ManifestContentData {
			// Another engine deleted rows (position or equality deletes):
			// a rewrite that does not apply them brings the rows back.
			u.DeleteFiles += len(entries)
			continue
		}
		for _, e := range entries {
			df := e.DataFile()
			loc := df.FilePath()
			u.DataFiles++
			if df.FileSizeBytes() >= o.TargetSize/2 {
				continue
			}
			u.SmallFiles++
			if o.Exclude[loc] || !strings.HasPrefix(loc, dataDir) {
				continue
			}
			part := path.Dir(strings.TrimPrefix(loc, dataDir))
			if part == "." {
				part = "" // an unpartitioned table's files lie in the data folder itself
			}
			byPart[part] = append(byPart[part], newFileInfo(df, seqField.ID, tsField.ID))
		}
	}
	return byPart, nil
}

// newFileInfo returns what the manifest says of data file df: its
// location, size, rows, and from the bounds of the fields seqID and tsID,
// its lowest sequence and newest row's time (0 when a bound is missing).
func newFileInfo(df iceberg.DataFile, seqID, tsID int) fileInfo {
	fi := fileInfo{loc: df.FilePath(), size: df.FileSizeBytes(), rows: df.Count()}
	if b := df.LowerBoundValues()[seqID]; len(b) == 8 {
		fi.first = int64(binary.LittleEndian.Uint64(b))
	}
	if b := df.UpperBoundValues()[tsID]; len(b) == 8 {
		fi.newTs = int64(binary.LittleEndian.Uint64(b))
	}
	return fi
}

// closedSince returns the newest row's time of a partition's files, and
// whether the partition is closed: every file's newest row is known and
// older than closedBefore (unix µs).
func closedSince(files []fileInfo, closedBefore int64) (newest int64, closed bool) {
	if slices.ContainsFunc(files, func(f fileInfo) bool { return f.newTs == 0 || f.newTs >= closedBefore }) {
		return 0, false
	}
	return slices.MaxFunc(files, func(a, b fileInfo) int { return cmp.Compare(a.newTs, b.newTs) }).newTs, true
}

// cutGroups sorts the files of partition part by first sequence and cuts
// them into groups of at most target bytes; it returns the groups of two
// files or more.
func cutGroups(part string, files []fileInfo, target int64) []CompactGroup {
	slices.SortFunc(files, func(a, b fileInfo) int { return cmp.Compare(a.first, b.first) })
	var groups []CompactGroup
	g := CompactGroup{Partition: part}
	flush := func() {
		if len(g.Files) >= 2 {
			groups = append(groups, g)
		}
		g = CompactGroup{Partition: part}
	}
	for _, f := range files {
		if g.Bytes+f.size > target && len(g.Files) > 0 {
			flush()
		}
		g.Files = append(g.Files, f.loc)
		g.Bytes += f.size
		g.Rows += f.rows
	}
	flush()
	return groups
}

// Compacted is a compacted data file, to be stored before Replace.
type Compacted struct {
	Location string
	Body     []byte
	Seqs     []uint64 // the stream sequences of its rows, ascending
}

// Rewrite reads a group's files and returns them as one data file whose
// rows are sorted by sequence, with the columns of the newest file (an
// older file lacking a column gives it nulls; an int column it has as int
// is widened). Its name is its sequence range and the group's id, in the
// group's partition folder.
func (t *Table) Rewrite(ctx context.Context, g CompactGroup) (*Compacted, error) {
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	files := make([]*parquet.File, len(g.Files))
	for i, loc := range g.Files {
		body, err := readAll(fs, loc)
		if err != nil {
			return nil, fmt.Errorf("compact %s: %w", loc, err)
		}
		if files[i], err = parquet.OpenFile(bytes.NewReader(body), int64(len(body))); err != nil {
			return nil, fmt.Errorf("compact %s: %w", loc, err)
		}
	}
	target := files[len(files)-1].Schema()
	seqLeaf, ok := target.Lookup("sequence")
	if !ok {
		return nil, fmt.Errorf("compact %s: no sequence column", g.Files[len(g.Files)-1])
	}
	seqCol := seqLeaf.ColumnIndex
	var rows []parquet.Row
	for i, f := range files {
		conv, err := parquet.Convert(target, f.Schema())
		if err != nil {
			return nil, fmt.Errorf("compact %s: %w", g.Files[i], err)
		}
		for _, rg := range f.RowGroups() {
			rr := parquet.ConvertRowGroup(rg, conv).Rows()
			buf := make([]parquet.Row, 256)
			for {
				n, err := rr.ReadRows(buf)
				for _, r := range buf[:n] {
					rows = append(rows, r.Clone())
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					rr.Close()
					return nil, fmt.Errorf("compact %s: %w", g.Files[i], err)
				}
			}
			rr.Close()
		}
	}
	seq := func(r parquet.Row) int64 {
		for _, v := range r {
			if v.Column() == seqCol {
				return v.Int64()
			}
		}
		return 0
	}
	slices.SortStableFunc(rows, func(a, b parquet.Row) int { return cmp.Compare(seq(a), seq(b)) })
	out := &Compacted{Seqs: make([]uint64, len(rows))}
	for i, r := range rows {
		out.Seqs[i] = uint64(seq(r))
	}
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, target, parquet.Compression(&parquet.Snappy))
	if _, err := w.WriteRows(rows); err != nil {
		return nil, fmt.Errorf("compact %s: %w", g.Partition, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("compact %s: %w", g.Partition, err)
	}
	out.Body = buf.Bytes()
	first, last := out.Seqs[0], out.Seqs[len(out.Seqs)-1]
	out.Location = pathtemplate.CompactedKey(strings.TrimSuffix(t.tbl.Location(), "/")+"/data", g.Partition, first, last, g.ID())
	return out, nil
}

// ErrCompactedAlready is returned by Replace when a file of the group is
// no longer in the table: another compaction replaced it.
var ErrCompactedAlready = errors.New("a file of the group is no longer in the table")

// Replace swaps a group's files for the compacted file, stored already, in
// one snapshot whose summary holds the group's id. Like Commit it owns the
// retries, starting from the table as it is each time: a data commit that
// lands meanwhile is kept, and a replace that landed though its answer was
// lost is found by its id.
func (t *Table) Replace(ctx context.Context, g CompactGroup, compacted string) error {
	id := g.ID()
	props := iceberg.Properties{CompactionIDProperty: id, SchemaIDProperty: fmt.Sprint(t.tbl.Schema().ID),
		"jetlake.compacted-files": fmt.Sprint(len(g.Files))}
	landed := func() bool {
		_, ok := t.summaryWith(CompactionIDProperty, id)
		return ok
	}
	err := t.retry(ctx, landed, func(tx *table.Transaction) error {
		err := t.replaceFiles(ctx, tx, g.Files, compacted, props)
		if err != nil && strings.Contains(err.Error(), "cannot delete files that do not belong to the table") {
			return errStop{fmt.Errorf("compaction %s: %w", id, ErrCompactedAlready)}
		}
		return err
	})
	if err != nil && !errors.Is(err, ErrCompactedAlready) {
		return fmt.Errorf("compaction %s of %s: %w", id, t.Name(), err)
	}
	return err
}

// replaceFiles swaps files for compacted in tx. iceberg-go infers the
// compacted file's partition from its column bounds, except a bucket's,
// which it refuses to: with a bucket in the spec the file's DataFile is
// made by dataFile, which reads the bucket from its partition folder.
func (t *Table) replaceFiles(ctx context.Context, tx *table.Transaction, files []string, compacted string, props iceberg.Properties) error {
	spec := t.tbl.Spec()
	hashed := false
	for _, f := range spec.Fields() {
		hashed = hashed || !f.Transform.PreservesOrder()
	}
	if !hashed {
		return tx.ReplaceDataFiles(ctx, files, []string{compacted}, props)
	}
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return err
	}
	df, err := dataFile(ctx, fs, compacted, t.tbl.Schema(), spec, t.tbl.Properties(), t.tbl.Location())
	if err != nil {
		return errStop{fmt.Errorf("compacted file %s: %w", compacted, err)}
	}
	// The files to delete are matched by location alone.
	del := make([]iceberg.DataFile, len(files))
	for i, loc := range files {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, loc, iceberg.ParquetFile, nil, nil, nil, 0, 0)
		if err != nil {
			return errStop{err}
		}
		del[i] = b.Build()
	}
	return tx.ReplaceDataFilesWithDataFiles(ctx, del, []iceberg.DataFile{df}, props)
}

func readAll(fs iceio.IO, loc string) ([]byte, error) {
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// ReferencedFiles returns the locations of the data and delete files of
// every snapshot the table keeps: those a reader may still read.
func (t *Table) ReferencedFiles(ctx context.Context) (map[string]bool, error) {
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	seen := map[string]bool{}
	for _, snap := range t.tbl.Metadata().Snapshots() {
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return nil, err
		}
		for _, m := range manifests {
			if seen[m.FilePath()] {
				continue
			}
			seen[m.FilePath()] = true
			entries, err := m.FetchEntries(fs, false)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				out[e.DataFile().FilePath()] = true
			}
		}
	}
	return out, nil
}
