package iceberg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// SnapshotInfo is one snapshot of the table, as its metadata lists it.
type SnapshotInfo struct {
	ID        int64
	Time      time.Time // when it was committed
	Operation string    // append, replace (a compaction), overwrite, delete
	Current   bool      // the table's current snapshot
}

// SnapshotFiles is what one snapshot of the table holds.
type SnapshotFiles struct {
	SnapshotInfo
	Data []string // the locations of its data files
	// Deletes counts its delete files: rows another engine deleted, which
	// its data files still hold.
	Deletes int
}

// ErrNoSuchSnapshot is returned, wrapped, by SnapshotFilesOf for a
// snapshot the table does not have (expired, or never its own).
var ErrNoSuchSnapshot = errors.New("no such snapshot")

// ErrNoSnapshot is returned, wrapped, by SnapshotFilesOf for the current
// snapshot of a table nothing was committed to yet.
var ErrNoSnapshot = errors.New("the table has no snapshot yet")

// SnapshotList returns the table's snapshots, as last loaded, oldest
// first.
func (t *Table) SnapshotList() []SnapshotInfo {
	meta := t.tbl.Metadata()
	var cur int64
	if s := meta.CurrentSnapshot(); s != nil {
		cur = s.SnapshotID
	}
	snaps := meta.Snapshots()
	out := make([]SnapshotInfo, 0, len(snaps))
	for _, s := range snaps {
		out = append(out, snapshotInfo(&s, cur))
	}
	slices.SortStableFunc(out, func(a, b SnapshotInfo) int { return a.Time.Compare(b.Time) })
	return out
}

func snapshotInfo(s *table.Snapshot, current int64) SnapshotInfo {
	info := SnapshotInfo{ID: s.SnapshotID, Time: time.UnixMilli(s.TimestampMs).UTC(), Current: s.SnapshotID == current}
	if s.Summary != nil {
		info.Operation = string(s.Summary.Operation)
	}
	return info
}

// SnapshotFilesOf returns the data files of the table's snapshot id, or,
// for id 0, of its current snapshot. Only the files the snapshot's
// manifests hold as live are listed: a data file stored and not committed
// yet, or replaced by a compaction after the snapshot, is not among them.
func (t *Table) SnapshotFilesOf(ctx context.Context, id int64) (*SnapshotFiles, error) {
	meta := t.tbl.Metadata()
	var cur int64
	if s := meta.CurrentSnapshot(); s != nil {
		cur = s.SnapshotID
	}
	var snap *table.Snapshot
	switch {
	case id == 0 && cur == 0:
		return nil, fmt.Errorf("iceberg table %s: %w", t.Name(), ErrNoSnapshot)
	case id == 0:
		snap = meta.CurrentSnapshot()
	default:
		if snap = meta.SnapshotByID(id); snap == nil {
			return nil, fmt.Errorf("iceberg table %s: %w %d (expired, or of another table); %s", t.Name(), ErrNoSuchSnapshot, id, t.describeSnapshots(10))
		}
	}
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("iceberg table %s, snapshot %d: %w", t.Name(), snap.SnapshotID, err)
	}
	out := &SnapshotFiles{SnapshotInfo: snapshotInfo(snap, cur)}
	for _, m := range manifests {
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return nil, fmt.Errorf("iceberg table %s, snapshot %d: manifest %s: %w", t.Name(), snap.SnapshotID, m.FilePath(), err)
		}
		if m.ManifestContent() != iceberg.ManifestContentData {
			out.Deletes += len(entries)
			continue
		}
		for _, e := range entries {
			if e.DataFile().ContentType() != iceberg.EntryContentData {
				out.Deletes++
				continue
			}
			out.Data = append(out.Data, e.DataFile().FilePath())
		}
	}
	return out, nil
}

// describeSnapshots says which snapshots the table has: the newest n.
func (t *Table) describeSnapshots(n int) string {
	list := t.SnapshotList()
	if len(list) == 0 {
		return "the table has no snapshot"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the table has %d snapshots", len(list))
	if len(list) > n {
		fmt.Fprintf(&b, ", the newest %d", n)
		list = list[len(list)-n:]
	}
	b.WriteString(":")
	for i, s := range list {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %d (%s %s", s.ID, s.Operation, s.Time.Format(time.RFC3339))
		if s.Current {
			b.WriteString(", current")
		}
		b.WriteString(")")
	}
	return b.String()
}
