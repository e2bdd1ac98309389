package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
)

// TableSeqs answers which sequences the table's current snapshot holds:
// by the bounds of its files, then by the sequence sets in the metadata of
// those whose bounds overlap.
type TableSeqs struct {
	store  objstore.ObjectStore
	bucket string // s3://bucket/
	held   []iceberg.HeldRange
	exact  map[string]progress.Seqs // by location; absent: not read yet
	bad    map[string]bool          // files whose metadata names no exact set
}

// Holds returns how many of seqs of stream the table's files hold, and
// whether it could tell: a file whose bounds overlap but whose metadata
// does not say its sequences leaves it unknown.
func (ts *TableSeqs) Holds(ctx context.Context, stream string, seqs progress.Seqs) (n int, known bool, err error) {
	known = true
	for _, h := range ts.held {
		if !h.Overlaps(stream, seqs.First(), seqs.Last()) {
			continue
		}
		set, ok, err := ts.seqsOf(ctx, h.Location)
		if err != nil {
			return 0, false, err
		}
		if !ok {
			known = false
			continue
		}
		n += set.Common(seqs)
	}
	return n, known, nil
}

// seqsOf returns the sequences a file of the table holds, by its metadata.
func (ts *TableSeqs) seqsOf(ctx context.Context, loc string) (progress.Seqs, bool, error) {
	if ts.exact == nil {
		ts.exact, ts.bad = map[string]progress.Seqs{}, map[string]bool{}
	}
	if set, ok := ts.exact[loc]; ok {
		return set, true, nil
	}
	if ts.bad[loc] || !strings.HasPrefix(loc, ts.bucket) {
		return progress.Seqs{}, false, nil
	}
	md, err := ts.store.Head(ctx, strings.TrimPrefix(loc, ts.bucket))
	if errors.Is(err, objstore.ErrNotFound) {
		ts.bad[loc] = true
		return progress.Seqs{}, false, nil
	}
	if err != nil {
		return progress.Seqs{}, false, fmt.Errorf("data file %s: %w", loc, err)
	}
	set, ok := objstore.SeqsOf(md)
	if !ok {
		ts.bad[loc] = true
		return progress.Seqs{}, false, nil
	}
	ts.exact[loc] = set
	return set, true, nil
}

// NewTableSeqs returns what answers which sequences the files held
// (the table's current snapshot's, as HeldRanges lists them) hold, reading
// their metadata from store under bucket (s3://bucket/).
func NewTableSeqs(store objstore.ObjectStore, bucket string, held []iceberg.HeldRange) *TableSeqs {
	return &TableSeqs{store: store, bucket: bucket, held: held}
}
