package lake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
)

// Unrecorded finds the data files a connector stored for its Iceberg
// table that nothing records for commit: no intent, no plan, no snapshot
// names them (the state bucket was purged or lost keys). Each file's own
// metadata says who wrote it, for which table, stream and intent, and which
// sequences it holds.
type Unrecorded struct {
	Cfg        *config.Connector
	Table      *iceberg.Table
	DataPrefix string // the table's data folder, as an object key prefix
	Bucket     string
	State      state.Store
	Store      SweptStore
	Log        *slog.Logger
	// Untrusted counts a file that is not believed, and left for an
	// operator.
	Untrusted func()
}

// Intents returns, as intents to restore, the unrecorded data files of
// stream (created at created, read by consumer). A file is left out when
// the table's current snapshot already holds one of its sequences (it is a
// duplicate the orphan sweep removes), or when another such file holds one
// too (which to commit is not known: both are reported).
func (u *Unrecorded) Intents(ctx context.Context, stream string, created time.Time, consumer string) ([]*state.Intent, error) {
	t := u.Table
	// The records first, then the table: a file committed and forgotten
	// between the two reads is in the table when it is read.
	named, err := state.NamedFiles(ctx, u.State, u.Cfg.Name)
	if err != nil {
		return nil, err
	}
	planned, err := PlannedFiles(ctx, u.State, u.Cfg)
	if err != nil {
		return nil, err
	}
	if err := t.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	refs, err := t.ReferencedFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	held, err := t.HeldRanges(ctx)
	if err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", t.Name(), err)
	}
	var unnamed []string
	err = u.Store.ListModified(ctx, u.DataPrefix+"/", func(key string, _ time.Time) error {
		if loc := "s3://" + u.Bucket + "/" + key; !refs[loc] && !planned[loc] && !named[key] {
			unnamed = append(unnamed, key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	found, err := u.files(ctx, stream, created, consumer, unnamed, held)
	if err != nil {
		return nil, err
	}
	return u.alone(found), nil
}

// files returns, as intents, those of keys whose metadata says this
// connector stored them for its table from stream, with the sequences
// they hold, and that overlap no range the table holds.
func (u *Unrecorded) files(ctx context.Context, stream string, created time.Time, consumer string, keys []string, held []iceberg.HeldRange) ([]*state.Intent, error) {
	ts := NewTableSeqs(u.Store, "s3://"+u.Bucket+"/", held)
	var out []*state.Intent
	for _, key := range keys {
		md, err := u.Store.Head(ctx, key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("data file %s: %w", key, err)
		}
		if !state.OwnFile(md, u.Cfg, u.Table.UUID()) || md[objstore.MetaCompaction] != "" || md[objstore.MetaIntent] == "" || md[objstore.MetaStream] != stream {
			continue
		}
		if c, err := time.Parse(time.RFC3339Nano, md[objstore.MetaStreamCreated]); err != nil || !c.Equal(created) {
			continue // of an earlier stream of the same name
		}
		seqs, ok := objstore.SeqsOf(md)
		if !ok {
			u.Log.Error("a stored data file no record names does not say which sequences it holds: it is left as it is, for an operator to commit",
				"key", key, "first_seq", md[objstore.MetaFirstSeq], "last_seq", md[objstore.MetaLastSeq], "count", md[objstore.MetaCount])
			u.Untrusted()
			continue
		}
		n, known, err := ts.Holds(ctx, stream, seqs)
		switch {
		case err != nil:
			return nil, err
		case known && n == seqs.Len():
			continue // a copy of what the table holds: the orphan sweep's
		case !known || n > 0:
			u.Log.Error("a stored data file no record names may share sequences with the table: it is not committed, for an operator to check",
				"key", key, "first_seq", seqs.First(), "last_seq", seqs.Last(), "messages", seqs.Len(), "held", n, "known", known)
			u.Untrusted()
			continue
		}
		out = append(out, &state.Intent{ID: md[objstore.MetaIntent], Key: key, Stream: stream, StreamCreated: created,
			Consumer: consumer, Seqs: seqs, Created: time.Now().UTC()})
	}
	return out, nil
}

// alone returns the intents of found none of whose sequences another of
// found holds; the others are reported, and left as they are.
func (u *Unrecorded) alone(found []*state.Intent) []*state.Intent {
	slices.SortFunc(found, func(a, b *state.Intent) int { return cmp.Compare(a.Seqs.First(), b.Seqs.First()) })
	clash := make([]bool, len(found))
	for i := range found {
		for j := i + 1; j < len(found) && found[j].Seqs.First() <= found[i].Seqs.Last(); j++ {
			if found[i].Seqs.Common(found[j].Seqs) > 0 {
				clash[i], clash[j] = true, true
			}
		}
	}
	var out []*state.Intent
	for i, in := range found {
		if !clash[i] {
			out = append(out, in)
			continue
		}
		u.Log.Error("a stored data file no record names shares sequences with another: neither is committed, for an operator to choose",
			"key", in.Key, "first_seq", in.Seqs.First(), "last_seq", in.Seqs.Last())
		u.Untrusted()
	}
	return out
}
