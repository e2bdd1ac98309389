package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jetlake/jetlake/config"
)

// recover loads the intents another process (an earlier run, or the
// instance that was pinned before) left for s, skipping the ones this
// process owns. An intent whose object exists was committed: its sequences
// are acked without being written again when they come back. An intent whose
// object is missing is unresolved: its owner may still be storing it, so its
// messages wait until resolveAfter has passed and the object is looked up
// again (see runner.resolve).
func (e *Exporter) recover(ctx context.Context, s *streamState) error {
	entries, err := e.intents.List(ctx, s.intentPrefix)
	if err != nil {
		return fmt.Errorf("list intents: %w", err)
	}
	if len(entries) > 0 {
		crashPoint("during-recovery")
	}
	known := s.book.known()
	for ikey, value := range entries {
		if known[ikey] {
			continue
		}
		var in intent
		if err := json.Unmarshal(value, &in); err != nil {
			return fmt.Errorf("intent %s: %w", ikey, err)
		}
		if !in.StreamCreated.Equal(s.created) {
			// The stream was re-created: these sequences are other messages.
			e.log.Warn("forgetting an intent of an earlier stream with the same name", "intent", ikey, "key", in.Key,
				"intent_stream_created", in.StreamCreated, "stream_created", s.created)
			if err := e.intents.Delete(ctx, ikey); err != nil {
				return err
			}
			continue
		}
		md, err := e.store.Head(ctx, in.Key)
		switch {
		case errors.Is(err, ErrNotFound):
			e.log.Info("recovery: batch not stored (yet); its messages wait until its writer must have given up",
				"key", in.Key, "messages", in.Seqs.Len())
			// Under pinned failover the intent may be another live
			// instance's; otherwise its writer was the process before.
			s.book.await(ikey, &in, time.Now().Add(resolveAfter(s.cfg.AckWait, s.cfg.Failover == config.FailoverPinned)))
		case err != nil:
			return err
		case md[MetaIntent] != in.ID:
			// Another batch's object holds the key (a second writer on the
			// prefix, refused at upload): this batch was never stored, and
			// its messages were never acked. Forgetting the intent lets
			// them be exported again, under the prefix the connector has
			// now; a collision there stops the exporter again.
			e.log.Warn("recovery: the object at this batch's key holds another batch; this batch was never stored and its messages are exported again",
				"key", in.Key, "messages", in.Seqs.Len(), "object_intent", md[MetaIntent], "object_stream", md[MetaStream])
			if err := e.intents.Delete(ctx, ikey); err != nil {
				return err
			}
		default:
			e.log.Info("recovery: batch was stored; its messages are acked when they come back", "key", in.Key, "messages", in.Seqs.Len())
			s.book.commit(ikey, in.Seqs)
			s.recovered++
		}
	}
	return nil
}

// takeOver recovers what the instance pinned before this one left, and
// starts the ledger from the export record it kept.
func (e *Exporter) takeOver(ctx context.Context, s *streamState) error {
	if err := e.recover(ctx, s); err != nil {
		return err
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ci, err := s.cons.Info(ictx)
	if err != nil {
		return fmt.Errorf("stream %s, consumer %s: %w", s.cfg.Stream, s.cfg.Consumer, err)
	}
	si, err := s.stream.Info(ictx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", s.cfg.Stream, err)
	}
	return e.startLedger(ctx, s, ci, &si.State)
}

// writerGone is how long a PUT of a writer that is gone may still land: it
// sends nothing more, but the store may yet commit a request it completed.
const writerGone = 10 * time.Second

// resolveAfter is how long an intent without its object stays unresolved.
// When its writer is gone (the process before this one, or an attempt of
// this process that was given up), that is writerGone. When it may be
// alive, paused (another instance that was pinned before this one), it
// abandons the batch once the messages' AckWait passes, but a PUT it had
// already sent can still land within one attempt's timeout.
func resolveAfter(ackWait time.Duration, writerAlive bool) time.Duration {
	d := attemptTimeout(ackWait) + 2*time.Second
	if writerAlive {
		return d
	}
	return min(d, writerGone)
}

// resolve decides about unresolved intents whose time is up: the object
// exists now (its messages are acked, not written) or it never will (the
// intent is deleted and its messages are exported anew).
func (r *runner) resolve(ctx context.Context, now time.Time) error {
	for _, s := range r.streams {
		for ikey, u := range s.book.due(now) {
			hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			md, err := r.e.store.Head(hctx, u.in.Key)
			cancel()
			switch {
			case errors.Is(err, ErrNotFound), err == nil && md[MetaIntent] != u.in.ID:
				// No object, or another batch's: this one was never
				// stored (a conditional write lets only one through).
				dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := r.e.intents.Delete(dctx, ikey)
				cancel()
				if err != nil {
					continue // try again on the next tick
				}
				r.log.Info("recovery: batch was never stored; its messages are exported again", "key", u.in.Key, "messages", u.in.Seqs.Len(),
					"object_of_another_batch", md[MetaIntent])
				if s.ledger != nil {
					u.in.Seqs.All(s.ledger.returned)
				}
			case err != nil:
				continue
			default:
				r.log.Info("recovery: batch was stored by its writer; its messages are acked", "key", u.in.Key, "messages", u.in.Seqs.Len())
				s.book.commit(ikey, u.in.Seqs)
				if s.ledger != nil {
					for _, run := range u.in.Seqs.runs {
						s.ledger.stored(Range{run[0], run[1]})
					}
				}
			}
			for _, d := range s.book.resolve(ikey) {
				r.add(d)
			}
			if r.fatalErr != nil {
				return r.fatalErr
			}
		}
	}
	return nil
}

// forget deletes an intent in the background; a failure leaves it for the
// next recovery, which handles it the same way.
func (r *runner) forget(intentKey string) {
	r.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.e.intents.Delete(ctx, intentKey); err != nil {
			r.log.Warn("could not delete a committed intent; the next start will", "intent", intentKey, "error", err)
		}
	})
}

// consumerGauges refreshes the consumer gauges from the consumers' info.
func (r *runner) consumerGauges(ctx context.Context) {
	for _, s := range r.streams {
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := s.cons.Info(ictx)
		cancel()
		if err != nil {
			continue
		}
		r.e.m.pending.WithLabelValues(r.e.cfg.Name, s.cfg.Stream).Set(float64(info.NumPending))
		r.e.m.ackPending.WithLabelValues(r.e.cfg.Name, s.cfg.Stream).Set(float64(info.NumAckPending))
	}
}
