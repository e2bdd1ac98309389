package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/exporter/lake"
)

// restoreIntents gives back their intents to the data files of s that this
// connector stored for its table but that nothing records for commit (see
// lake.Unrecorded); recovery then treats each as any stored batch: it is
// committed, and its messages are acked without being written again should
// they come back.
func (e *session) restoreIntents(ctx context.Context, s *streamState) error {
	lt := e.table
	ls, ok := e.store.(lake.SweptStore)
	if lt == nil || !ok {
		return nil
	}
	u := &lake.Unrecorded{Cfg: e.cfg, Table: lt.t, DataPrefix: lt.dataPrefix, Bucket: lt.bucket, State: e.intents, Store: ls, Log: e.log,
		Untrusted: func() { e.m.Untrusted.WithLabelValues(e.cfg.Name, "data-file").Inc() }}
	found, err := u.Intents(ctx, s.cfg.Stream, s.created, s.cfg.Consumer)
	if err != nil {
		return err
	}
	for _, in := range found {
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
