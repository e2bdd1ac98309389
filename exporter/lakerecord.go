package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
)

// The lake is the record of last resort. A memory consumer is gone after a
// server restart, and then the export record is the only cursor; a state
// bucket that lost its keys, was restored from an old snapshot or was
// written by hand would make jetlake export sequences again, or skip them,
// with exit 0. Before a stream's first message is read, its record is
// compared with the consumer and, when they disagree or there is no
// record, with what the lake holds (object names and metadata carry the
// sequences); the record is rebuilt from the lake when the lake shows
// another story. Listing the lake costs one pass over the connector's
// prefix, so it happens only then: a record the consumer's ack floor
// confirms is believed without it.

// checkRecord makes s's export record say what the consumer and the lake
// show, before a message of s is read. The record is rebuilt from the lake
// (and written back to the state bucket) when there is none, or it is
// unreadable or of an earlier stream, and the lake holds objects of this
// stream; and when it claims sequences the stream never had, or sequences
// the stream still holds that neither the consumer's ack floor nor the lake
// show exported. The intents in the bucket stay as they are: recovery
// applies them after.
func (s *streamWriter) checkRecord(ctx context.Context) error {
	s.record.checked = nil
	if s.sn.intents == nil {
		return nil
	}
	for attempt := 0; ; attempt++ {
		err := s.checkRecordOnce(ctx)
		if !errors.Is(err, state.ErrRecordChanged) || attempt == 4 {
			return err
		}
		// Another instance wrote the record meanwhile: judged again.
	}
}

// checkRecordOnce is one checkRecord; state.ErrRecordChanged says another
// writer came first.
func (s *streamWriter) checkRecordOnce(ctx context.Context) error {
	// The record first, then the consumer and the lake: what another
	// instance stores meanwhile is in the lake before a record claims it.
	rec, rev, err := state.LoadRecord(ctx, s.sn.intents, s.record.key)
	var bad *state.UnreadableRecordError
	if err != nil && !errors.As(err, &bad) {
		return err
	}
	var ackFloor uint64
	cons, err := s.stream.Consumer(ctx, s.cfg.Consumer)
	found := err == nil
	switch {
	case found:
		ackFloor = jsclient.Proven(cons.CachedInfo())
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return fmt.Errorf("consumer info: %w", err)
	}
	si, err := s.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream info: %w", err)
	}
	belief := state.Judge(rec, s.created, si.State.LastSeq)
	if belief == state.Believed && found && rec.Claims() <= ackFloor {
		s.record.checked = rec
		return nil // the consumer shows as much
	}
	rd, ok := s.sn.store.(objstore.ObjectReader)
	if !ok {
		return nil // a store that can not be listed: the record is all there is
	}
	pending, err := s.sn.sink.namedFiles(ctx, s.sn)
	if err != nil {
		return err
	}
	x, err := lake.ReadExported(ctx, s.sn.cfg, s.cfg.Stream, s.created, s.markerConsumers(), pending, rd)
	if err != nil {
		return fmt.Errorf("what the lake holds: %w", err)
	}
	lk := x.Seqs.Runs()
	base := state.Base(ackFloor, found, lk)
	filtered := s.part != nil || !config.FiltersCover(s.cfg.Subjects, si.Config.Subjects)
	var keep *state.Record
	var cut uint64
	switch belief {
	case state.Believed:
		un := state.Unconfirmed(rec, base, lk)
		if len(un) == 0 {
			s.record.checked = rec
			return nil // the lake shows it
		}
		if filtered {
			// A filtered consumer's record passes other subjects'
			// sequences, which no object holds: only a claim past what the
			// consumer and the lake show, over messages of its own
			// subjects the stream still holds, is in doubt.
			cut = max(base, x.Last())
			if rec.Claims() <= cut {
				s.record.checked = rec
				return nil
			}
			seqs, _, err := jsclient.ReadSequences(ctx, s.sn.js, s.cfg.Stream, s.cfg.Subjects, cut+1, rec.Claims(), 1, 0)
			if err != nil {
				return fmt.Errorf("stream %s: %w", s.cfg.Stream, err)
			}
			if len(seqs) == 0 || seqs[0] > rec.Claims() {
				s.record.checked = rec
				return nil
			}
			keep = rec
		}
	case state.Forged:
	default: // none, unreadable, or of an earlier stream
		if x.Seqs.Empty() {
			return nil // nothing exported: deliver_policy (or the consumer) says where to start
		}
	}
	out := state.Rebuilt(s.created, base, lk, keep, cut, time.Now())
	value, err := json.Marshal(&out)
	if err != nil {
		return err
	}
	if len(value) > state.MaxRecordDone {
		// The bucket keeps the floor; this process keeps all of it.
		short := out
		short.Done = progress.Seqs{}
		if value, err = json.Marshal(&short); err != nil {
			return err
		}
	}
	if _, err := s.sn.intents.Update(ctx, s.record.key, value, rev); err != nil {
		return fmt.Errorf("export record %s: %w", s.record.key, err)
	}
	s.record.checked = &out
	attrs := s.logAttrs("record", s.record.key, "floor", out.Floor, "done_ranges", len(out.Done.Ranges()),
		"lake_objects", x.Objects, "lake_markers", x.Markers, "lake_rejected", x.Rejected, "lake_up_to", x.Last(),
		"consumer_found", found, "ack_floor", ackFloor)
	if x.Unknown > 0 {
		attrs = append(attrs, "objects_without_sequences", x.Unknown)
	}
	switch belief {
	case state.Believed:
		s.log.Warn("the export record claims sequences the stream holds that neither the consumer nor the lake show exported: it is rebuilt from the lake before a message is read, and what the lake lacks is exported",
			append(attrs, "record_floor", rec.Floor, "record_claims_up_to", rec.Claims())...)
		s.sn.m.Untrusted.WithLabelValues(s.sn.cfg.Name, "export_record").Inc()
	case state.Forged:
		s.log.Error("the export record claims sequences the stream never had: it is rebuilt from the lake before a message is read",
			append(attrs, "record_floor", rec.Floor, "record_claims_up_to", rec.Claims(), "stream_last_seq", si.State.LastSeq)...)
		s.sn.m.Untrusted.WithLabelValues(s.sn.cfg.Name, "export_record").Inc()
	default:
		why := "there is none"
		switch {
		case bad != nil:
			why = "it can not be read"
		case rec != nil:
			why = "it is of an earlier stream of the same name"
		}
		s.log.Warn("the export record is rebuilt from the lake before a message is read: "+why+", and the lake holds objects of this stream",
			attrs...)
	}
	return nil
}

// markerConsumers are the consumers whose loss markers count as s's: its
// own and, for a partition, its entry's.
func (s *streamWriter) markerConsumers() []string {
	if s.base != "" {
		return []string{s.cfg.Consumer, s.base}
	}
	return []string{s.cfg.Consumer}
}

// checkedRecord returns the export record checked at set-up when it is
// of the stream s reads now, or nil.
func (s *streamWriter) checkedRecord() *state.Record {
	r := s.record.checked
	if r == nil || !r.StreamCreated.Equal(s.created) {
		return nil
	}
	return r
}

// withChecked adds to start what the record checked at set-up says,
// rebuilt from the lake or confirmed by the consumer or the lake: the
// bucket keeps only its floor when its done ranges are too many, and
// another writer may have replaced it since, with a record that is not
// believed. What was exported then is exported still; an ack-less
// consumer shows no more than where it was created.
func (s *streamWriter) withChecked(start *ledgerStart) {
	if r := s.checkedRecord(); r != nil {
		start.floor, start.done = state.Merged(start.floor, start.done, r)
	}
}
