package exporter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/exporter/iceberg"
	"github.com/jetlake/jetlake/exporter/objstore"
	"github.com/jetlake/jetlake/exporter/progress"
	"github.com/jetlake/jetlake/exporter/state"
	"github.com/jetlake/jetlake/exporter/statekey"
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
	ls, ok := e.store.(orphanStore)
	if lt == nil || !ok {
		return nil
	}
	// The records first, then the table: a file committed and forgotten
	// between the two reads is in the table when it is read.
	named, err := namedFiles(ctx, e.intents, e.cfg.Name)
	if err != nil {
		return err
	}
	planned, err := plannedFiles(ctx, e.intents, e.cfg)
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
	ts := &tableSeqs{store: e.store, bucket: "s3://" + e.table.bucket + "/", held: held}
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
		seqs, ok := metaSeqs(md)
		if !ok {
			e.log.Error("a stored data file no record names does not say which sequences it holds: it is left as it is, for an operator to commit",
				"key", key, "first_seq", md[objstore.MetaFirstSeq], "last_seq", md[objstore.MetaLastSeq], "count", md[objstore.MetaCount])
			e.m.untrusted.WithLabelValues(e.cfg.Name, "data-file").Inc()
			continue
		}
		n, known, err := ts.holds(ctx, s.cfg.Stream, seqs)
		switch {
		case err != nil:
			return nil, err
		case known && n == seqs.Len():
			continue // a copy of what the table holds: the orphan sweep's
		case !known || n > 0:
			e.log.Error("a stored data file no record names may share sequences with the table: it is not committed, for an operator to check",
				"key", key, "first_seq", seqs.First(), "last_seq", seqs.Last(), "messages", seqs.Len(), "held", n, "known", known)
			e.m.untrusted.WithLabelValues(e.cfg.Name, "data-file").Inc()
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
		e.m.untrusted.WithLabelValues(e.cfg.Name, "data-file").Inc()
	}
	return out
}

// metaSeqs returns the sequences a data object's metadata says it holds:
// its sequence set, or its first to last sequence when the count says
// there is no gap.
func metaSeqs(md map[string]string) (progress.Seqs, bool) {
	first, err1 := strconv.ParseUint(md[objstore.MetaFirstSeq], 10, 64)
	last, err2 := strconv.ParseUint(md[objstore.MetaLastSeq], 10, 64)
	count, err3 := strconv.ParseUint(md[objstore.MetaCount], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || first == 0 || last < first {
		return progress.Seqs{}, false
	}
	if enc := md[objstore.MetaSeqs]; enc != "" {
		var s progress.Seqs
		if err := s.UnmarshalJSON([]byte(strconv.Quote(enc))); err != nil || s.First() != first || s.Last() != last || uint64(s.Len()) != count {
			return progress.Seqs{}, false
		}
		return s, true
	}
	if last-first+1 != count {
		return progress.Seqs{}, false
	}
	return progress.SeqsOf([]progress.Range{{First: first, Last: last}}), true
}

// tableSeqs answers which sequences the table's current snapshot holds:
// by the bounds of its files, then by the sequence sets in the metadata of
// those whose bounds overlap.
type tableSeqs struct {
	store  objstore.ObjectStore
	bucket string // s3://bucket/
	held   []iceberg.HeldRange
	exact  map[string]progress.Seqs // by location; absent: not read yet
	bad    map[string]bool          // files whose metadata names no exact set
}

// holds returns how many of seqs of stream the table's files hold, and
// whether it could tell: a file whose bounds overlap but whose metadata
// does not say its sequences leaves it unknown.
func (ts *tableSeqs) holds(ctx context.Context, stream string, seqs progress.Seqs) (n int, known bool, err error) {
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
func (ts *tableSeqs) seqsOf(ctx context.Context, loc string) (progress.Seqs, bool, error) {
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
	set, ok := metaSeqs(md)
	if !ok {
		ts.bad[loc] = true
		return progress.Seqs{}, false, nil
	}
	ts.exact[loc] = set
	return set, true, nil
}

// namedFiles returns the object keys the intents of a connector name.
func namedFiles(ctx context.Context, st state.Store, connector string) (map[string]bool, error) {
	intents, err := st.List(ctx, statekey.Intents(connector))
	if err != nil {
		return nil, fmt.Errorf("list intents: %w", err)
	}
	named := map[string]bool{}
	for key, value := range intents {
		var in state.Intent
		if err := json.Unmarshal(value, &in); err != nil {
			return nil, fmt.Errorf("intent %s: %w", key, err)
		}
		if strings.TrimSpace(in.Key) != "" {
			named[in.Key] = true
		}
	}
	return named, nil
}
