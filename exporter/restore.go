package exporter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/exporter/iceberg"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/exporter/objstore"
	"github.com/jetlake/jetlake/exporter/state"
)

// restoreIntents gives back their intents to the data files of s that this
// connector stored for its table but that nothing records for commit: no
// intent, no plan, no snapshot names them (the state bucket was purged or
// lost keys). Each file's own metadata says who wrote it, for which table,
// stream and intent, and which sequences it holds; recovery then treats it
// as any stored batch: it is committed, and its messages are acked without
// being written again should they come back. A file is left alone when
// the table's current snapshot already holds one of its sequences (it is
// a duplicate the orphan sweep removes), or when another such file holds
// one too (which to commit is not known: both are reported).
func (e *Exporter) restoreIntents(ctx context.Context, s *streamState) error {
	lt := e.table
	ls, ok := e.store.(lake.OrphanStore)
	if lt == nil || !ok {
		return nil
	}
	// The records first, then the table: a file committed and forgotten
	// between the two reads is in the table when it is read.
	named, err := state.NamedFiles(ctx, e.intents, e.cfg.Name)
	if err != nil {
		return err
	}
	planned, err := lake.PlannedFiles(ctx, e.intents, e.cfg)
	if err != nil {
		return err
	}
	if err := lt.t.Refresh(ctx); err != nil {
		return fmt.Errorf("iceberg table %s: %w", lt.t.Name(), err)
	}
	refs, err := lt.t.ReferencedFiles(ctx)
	if err != nil {
		return fmt.Errorf("iceberg table %s: %w", lt.t.Name(), err)
	}
	held, err := lt.t.HeldRanges(ctx)
	if err != nil {
		return fmt.Errorf("iceberg table %s: %w", lt.t.Name(), err)
	}
	var unnamed []string
	err = ls.ListModified(ctx, lt.dataPrefix+"/", func(key string, _ time.Time) error {
		if loc := lt.location(key); !refs[loc] && !planned[loc] && !named[key] {
			unnamed = append(unnamed, key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	found, err := e.uncommittedFiles(ctx, s, unnamed, held)
	if err != nil {
		return err
	}
	for _, in := range e.alone(found) {
		value, err := json.Marshal(in)
		if err != nil {
			return err
		}
		err = e.intents.Create(ctx, s.intentPrefix+in.ID, value)
		if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("restore the intent of %s: %w", in.Key, err)
		}
		e.log.Warn("recovery: a stored data file had no record in the state bucket; its intent is restored from its metadata and it is committed",
			"key", in.Key, "first_seq", in.Seqs.First(), "last_seq", in.Seqs.Last(), "messages", in.Seqs.Len())
	}
	return nil
}

// uncommittedFiles returns, as intents, those of keys whose metadata says
// this connector stored them for its table from s's stream, with the
// sequences they hold, and that overlap no range the table holds.
func (e *Exporter) uncommittedFiles(ctx context.Context, s *streamState, keys []string, held []iceberg.HeldRange) ([]*state.Intent, error) {
	ts := lake.NewTableSeqs(e.store, "s3://"+e.table.bucket+"/", held)
	var out []*state.Intent
	for _, key := range keys {
		md, err := e.store.Head(ctx, key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("data file %s: %w", key, err)
		}
		if !state.OwnFile(md, e.cfg, e.table.uuid) || md[objstore.MetaCompaction] != "" || md[objstore.MetaIntent] == "" || md[objstore.MetaStream] != s.cfg.Stream {
			continue
		}
		if created, err := time.Parse(time.RFC3339Nano, md[objstore.MetaStreamCreated]); err != nil || !created.Equal(s.created) {
			continue // of an earlier stream of the same name
		}
		seqs, ok := objstore.SeqsOf(md)
		if !ok {
			e.log.Error("a stored data file no record names does not say which sequences it holds: it is left as it is, for an operator to commit",
				"key", key, "first_seq", md[objstore.MetaFirstSeq], "last_seq", md[objstore.MetaLastSeq], "count", md[objstore.MetaCount])
			e.m.Untrusted.WithLabelValues(e.cfg.Name, "data-file").Inc()
			continue
		}
		n, known, err := ts.Holds(ctx, s.cfg.Stream, seqs)
		switch {
		case err != nil:
			return nil, err
		case known && n == seqs.Len():
			continue // a copy of what the table holds: the orphan sweep's
		case !known || n > 0:
			e.log.Error("a stored data file no record names may share sequences with the table: it is not committed, for an operator to check",
				"key", key, "first_seq", seqs.First(), "last_seq", seqs.Last(), "messages", seqs.Len(), "held", n, "known", known)
			e.m.Untrusted.WithLabelValues(e.cfg.Name, "data-file").Inc()
			continue
		}
		out = append(out, &state.Intent{ID: md[objstore.MetaIntent], Key: key, Stream: s.cfg.Stream, StreamCreated: s.created,
			Consumer: s.cfg.Consumer, Seqs: seqs, Created: time.Now().UTC()})
	}
	return out, nil
}

// alone returns the intents of found none of whose sequences another of
// found holds; the others are reported, and left as they are.
func (e *Exporter) alone(found []*state.Intent) []*state.Intent {
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
		e.log.Error("a stored data file no record names shares sequences with another: neither is committed, for an operator to choose",
			"key", in.Key, "first_seq", in.Seqs.First(), "last_seq", in.Seqs.Last())
		e.m.Untrusted.WithLabelValues(e.cfg.Name, "data-file").Inc()
	}
	return out
}
