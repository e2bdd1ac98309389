package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/fault"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
)

// recovery is what the intents another process left say about a stream:
// found beside the loop, applied on it.
type recovery struct {
	committed  map[string]*state.Intent // intents whose object exists, by intent key
	unresolved map[string]*state.Intent
}

// recover loads the intents another process (an earlier run, or the
// instance that was pinned before) left for s, skipping the ones this
// process owns, and applies them to s's book. The data files of the table
// that lost their records get them back from their own metadata first.
func (s *streamWriter) recover(ctx context.Context) error {
	if err := s.sn.sink.recoverFiles(ctx, s.sn, s); err != nil {
		return err
	}
	rec, err := s.findIntents(ctx, s.book.Known())
	if err != nil {
		return err
	}
	s.applyRecovery(rec, time.Now(), s.sn.sink)
	return nil
}

// findIntents looks up the intents of s not in known. An intent whose
// object exists was committed: its sequences are acked without being
// written again when they come back. An intent whose object is missing is
// unresolved: its owner may still be storing it, so its messages wait until
// resolveAfter has passed and the object is looked up again (see
// runner.resolve). It reads only what does not change after set-up (cfg,
// created, intentPrefix), so it may run beside the loop.
func (s *streamWriter) findIntents(ctx context.Context, known map[string]bool) (*recovery, error) {
	entries, err := s.sn.intents.List(ctx, s.intentPrefix)
	if err != nil {
		return nil, fmt.Errorf("list intents: %w", err)
	}
	if len(entries) > 0 {
		fault.Point("during-recovery")
	}
	rec := &recovery{committed: map[string]*state.Intent{}, unresolved: map[string]*state.Intent{}}
	var lastSeq uint64 // read once there is an intent to check
	for ikey, value := range entries {
		if known[ikey] {
			continue
		}
		var in state.Intent
		if err := json.Unmarshal(value, &in); err != nil {
			// Not going away by itself: retries would not help.
			return nil, &failure.Permanent{Code: "IntentUnreadable", Err: fmt.Errorf("intent %s: %w", ikey, err)}
		}
		if !in.StreamCreated.Equal(s.created) {
			// The stream was re-created: these sequences are other messages.
			s.log.Warn("forgetting an intent of an earlier stream with the same name", "intent", ikey, "key", in.Key,
				"intent_stream_created", in.StreamCreated, "stream_created", s.created)
			if err := s.sn.intents.Delete(ctx, ikey); err != nil {
				return nil, err
			}
			continue
		}
		if lastSeq == 0 {
			if lastSeq, err = s.lastSeq()(ctx); err != nil {
				return nil, fmt.Errorf("stream %s: %w", s.cfg.Stream, err)
			}
		}
		if why := implausible(&in, lastSeq, maxIntentSeqs(s.sn.cfg, s)); why != "" {
			s.log.Error("ignoring an intent jetlake could not have written: its sequences are exported as if it were not there", "intent", ikey,
				"key", in.Key, "why", why)
			s.sn.m.Untrusted.WithLabelValues(s.sn.cfg.Name, "intent").Inc()
			continue
		}
		md, err := s.sn.store.Head(ctx, in.Key)
		switch {
		case errors.Is(err, objstore.ErrNotFound):
			s.log.Info("recovery: batch not stored (yet); its messages wait until its writer must have given up",
				"key", in.Key, "messages", in.Seqs.Len())
			rec.unresolved[ikey] = &in
		case err != nil:
			return nil, err
		case md[objstore.MetaIntent] == in.ID && !describes(md, &in):
			// The object is the one the intent's id names, but the
			// intent's sequences are not the object's: believing them
			// would ack messages the object does not hold.
			s.log.Error("ignoring an intent whose sequences are not those of the object it names", "intent", ikey, "key", in.Key,
				"intent_first", in.Seqs.First(), "intent_last", in.Seqs.Last(), "object_first", md[objstore.MetaFirstSeq], "object_last", md[objstore.MetaLastSeq],
				"object_count", md[objstore.MetaCount])
			s.sn.m.Untrusted.WithLabelValues(s.sn.cfg.Name, "intent").Inc()
		case md[objstore.MetaIntent] != in.ID:
			// Another batch's object holds the key (a second writer on the
			// prefix, refused at upload): this batch was never stored, and
			// its messages were never acked. Forgetting the intent lets
			// them be exported again, under the prefix the connector has
			// now; a collision there stops the exporter again.
			s.log.Warn("recovery: the object at this batch's key holds another batch; this batch was never stored and its messages are exported again",
				"key", in.Key, "messages", in.Seqs.Len(), "object_intent", md[objstore.MetaIntent], "object_stream", md[objstore.MetaStream])
			if err := s.sn.intents.Delete(ctx, ikey); err != nil {
				return nil, err
			}
		default:
			s.log.Info("recovery: batch was stored; its messages are acked when they come back", "key", in.Key, "messages", in.Seqs.Len())
			rec.committed[ikey] = &in
		}
	}
	return rec, nil
}

// applyRecovery records what findIntents found in s's book, and hands the
// stored data objects to the sink.
func (s *streamWriter) applyRecovery(rec *recovery, now time.Time, sk sink) {
	for ikey, in := range rec.committed {
		sk.found(ikey, in)
		s.book.Found(ikey, in.Seqs)
		s.recovered++
	}
	for ikey, in := range rec.unresolved {
		// Under pinned failover the intent may be another live instance's;
		// otherwise its writer was the process before.
		s.await(ikey, in, now.Add(resolveAfter(s.cfg.AckWait, s.cfg.Failover == config.FailoverPinned)))
	}
}

// unresolved is an intent whose object was missing when it was found: the
// store is asked again at its deadline. Its sequences wait in the stream's
// book; the deliveries of them that come meanwhile wait here.
type unresolved struct {
	in       *state.Intent
	deadline time.Time
	waiting  map[uint64]delivery // by sequence
}

// await records an intent whose object is missing: its messages wait
// until deadline, when the store is asked again.
func (s *streamWriter) await(ikey string, in *state.Intent, deadline time.Time) {
	s.book.Await(ikey, in.Seqs)
	if s.unsure == nil {
		s.unsure = map[string]*unresolved{}
	}
	s.unsure[ikey] = &unresolved{in: in, deadline: deadline}
}

// wait keeps d, a delivery of a sequence the book classified Waiting, to
// be handled once its intent is resolved. Only the latest delivery of a
// message can be acked: the server redelivers it every AckWait while the
// store is asked.
func (s *streamWriter) wait(seq uint64, d delivery) {
	for _, u := range s.unsure {
		if seq >= u.in.Seqs.First() && seq <= u.in.Seqs.Last() && u.in.Seqs.Has(seq) {
			if u.waiting == nil {
				u.waiting = map[uint64]delivery{}
			}
			u.waiting[seq] = d
			return
		}
	}
}

// resetBook forgets what an earlier recovery found, before it runs again.
func (s *streamWriter) resetBook() {
	s.book.Reset()
	clear(s.unsure)
}

// takeOver starts, beside the loop, the recovery of what the instance
// pinned before this one left, and the ledger from the export record it
// kept. Until both are applied, the stream's deliveries are parked.
func (s *streamWriter) takeOver(ctx context.Context) {
	if s.fence.takingOver {
		return
	}
	s.fence.takingOver = true
	known := s.book.Known()
	s.hub.beside(func() func() {
		// The state bucket may be electing a leader (a takeover often
		// follows a disruption): wait for it rather than stop.
		var rec *recovery
		var start *ledgerStart
		err := retry(ctx, s.log, "state bucket", func(ctx context.Context) (err error) {
			if rec, err = s.findIntents(ctx, known); err == nil {
				start, err = s.loadLedgerStart(ctx)
			}
			return err
		})
		return func() {
			s.fence.takingOver = false
			if err != nil {
				if ctx.Err() == nil {
					s.hub.fail(err)
				}
				return
			}
			s.book.Stop()
			s.applyRecovery(rec, time.Now(), s.sn.sink)
			s.startLedger(start, s.log)
			// What the consumer delivered to the instance pinned before,
			// and that was not exported, comes again.
			s.rewindAfter(ctx, "taken over: the instance pinned before was delivered sequences the export record lacks", s.fence.pinnedFrom)
			parked := s.fence.parked
			s.fence.parked = nil
			for _, d := range parked {
				s.hub.add(ctx, d)
			}
		}
	})
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

// resolveChore decides, beside the loop, about s's unresolved intents
// whose time is up: the object exists now (its messages are acked, not
// written) or it never will (the intent is deleted and its messages are
// exported anew). An intent the store could not answer about is asked
// again a second later.
func (s *streamWriter) resolveChore() *chore {
	c := &chore{name: "resolve"}
	c.due = func(now time.Time, final bool) bool {
		if final {
			return false
		}
		for _, u := range s.unsure {
			if !now.Before(u.deadline) {
				return true
			}
		}
		return false
	}
	c.start = func(now time.Time) choreWork {
		var due []resolution
		for ikey, u := range s.unsure {
			if !now.Before(u.deadline) {
				due = append(due, resolution{ikey: ikey, u: u})
			}
		}
		return func(ctx context.Context) (func(), error) {
			var wg sync.WaitGroup
			next := make(chan *resolution)
			for range min(forgetConcurrency, len(due)) {
				wg.Go(func() {
					for res := range next {
						res.stored, res.err = s.sn.resolveIntent(ctx, res.ikey, res.u.in)
					}
				})
			}
			for i := range due {
				next <- &due[i]
			}
			close(next)
			wg.Wait()
			return func() {
				for _, res := range due {
					s.resolved(ctx, res)
				}
			}, nil
		}
	}
	return c
}

// resolution is what the store said about an unresolved intent.
type resolution struct {
	ikey   string
	u      *unresolved
	stored bool
	err    error
}

// resolveIntent asks the store whether the object of an unresolved intent
// exists, and deletes the intent when it never will.
func (e *session) resolveIntent(ctx context.Context, ikey string, in *state.Intent) (bool, error) {
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	md, err := e.store.Head(hctx, in.Key)
	cancel()
	switch {
	case errors.Is(err, objstore.ErrNotFound), err == nil && md[objstore.MetaIntent] != in.ID:
		// No object, or another batch's: this one was never stored (a
		// conditional write lets only one through).
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := e.intents.Delete(dctx, ikey)
		cancel()
		if err != nil {
			return false, err
		}
		e.log.Info("recovery: batch was never stored; its messages are exported again", "key", in.Key, "messages", in.Seqs.Len(),
			"object_of_another_batch", md[objstore.MetaIntent])
		return false, nil
	case err != nil:
		return false, err
	}
	e.log.Info("recovery: batch was stored by its writer; its messages are acked", "key", in.Key, "messages", in.Seqs.Len())
	return true, nil
}

// resolved applies what resolveIntent found, and hands the deliveries that
// waited for it to add again.
func (s *streamWriter) resolved(ctx context.Context, res resolution) {
	ikey, u := res.ikey, res.u
	if s.unsure[ikey] != u {
		return // a takeover or reset since
	}
	if res.err != nil {
		u.deadline = time.Now().Add(time.Second)
		return
	}
	if res.stored {
		s.sn.sink.found(ikey, u.in)
	}
	s.book.Resolve(ikey, res.stored)
	delete(s.unsure, ikey)
	for _, d := range u.waiting {
		d.pull = 0 // out of order now
		s.hub.add(ctx, d)
	}
}

// forgetConcurrency is how many intent deletions run at once, so that a
// floor passing 100,000 batches at once does not start 100,000 goroutines.
const forgetConcurrency = 8

// forget queues intents to delete beside the loop (forgetChore).
func (r *runner) forget(keys []string) {
	r.chores.forgetQueue = append(r.chores.forgetQueue, keys...)
}

// forgetChore deletes the queued intents beside the loop, 4,096 at a time
// and a few at once, and every one left on the way out. A failure leaves
// an intent for the next recovery, which handles it the same way.
func (r *runner) forgetChore() *chore {
	return &chore{
		name: "forget", keepOnStop: true, atShutdown: true, queue: true,
		due: func(time.Time, bool) bool { return len(r.chores.forgetQueue) > 0 },
		start: func(time.Time) choreWork {
			n := min(len(r.chores.forgetQueue), 4096)
			batch := slices.Clone(r.chores.forgetQueue[:n])
			r.chores.forgetQueue = slices.Delete(r.chores.forgetQueue, 0, n)
			return func(ctx context.Context) (func(), error) {
				failed := r.deleteIntents(ctx, batch)
				return func() { r.sink.forgotten(batch, failed) }, nil
			}
		},
	}
}

// deleteIntents deletes keys, in one go when the store can (bulkStore),
// forgetConcurrency at a time otherwise, and returns those it could not
// delete.
func (e *session) deleteIntents(ctx context.Context, keys []string) map[string]bool {
	if bulk, ok := e.intents.(bulkStore); ok {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		failed := map[string]bool{}
		for key, err := range bulk.DeleteAll(dctx, keys) {
			if len(failed) == 0 {
				e.log.Warn("could not delete committed intents; the next start will", "intent", key, "error", err)
			}
			failed[key] = true
		}
		return failed
	}
	next := make(chan string)
	var mu sync.Mutex
	failed := map[string]bool{}
	var wg sync.WaitGroup
	for range min(forgetConcurrency, len(keys)) {
		wg.Go(func() {
			for key := range next {
				dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				if err := e.intents.Delete(dctx, key); err != nil {
					e.log.Warn("could not delete a committed intent; the next start will", "intent", key, "error", err)
					mu.Lock()
					failed[key] = true
					mu.Unlock()
				}
				cancel()
			}
		})
	}
	for _, key := range keys {
		next <- key
	}
	close(next)
	wg.Wait()
	return failed
}

// maxIntentSeqs bounds the sequences of one intent of s: a batch holds
// unacked messages only, so never more than max_ack_pending (or the
// largest it is derived to, should it have been lowered since), nor more
// than max_messages_per_file.
func maxIntentSeqs(cfg *config.Connector, s *streamWriter) uint64 {
	return uint64(max(s.cfg.MaxAckPending, cfg.Rotation.MaxMessagesPerFile, config.MaxDerivedAckPending))
}

// implausible says why in can not be an intent jetlake wrote for a stream
// whose last sequence is lastSeq, or returns "": it names no sequence, a
// sequence the stream never had, or more than max sequences. Such an
// intent is never expanded: a run of 2^36 sequences would take a map
// entry each.
func implausible(in *state.Intent, lastSeq, max uint64) string {
	if len(in.Seqs.Ranges()) == 0 {
		return "it names no sequence"
	}
	if last := in.Seqs.Last(); last > lastSeq {
		return fmt.Sprintf("it names sequence %d, past the stream's last sequence %d", last, lastSeq)
	}
	var n uint64
	for _, r := range in.Seqs.Ranges() {
		n += r.Last - r.First + 1 // no overflow: every run lies within 1..lastSeq
		if n > max {
			return fmt.Sprintf("it names more than %d sequences, more than one batch holds", max)
		}
	}
	return ""
}

// describes reports whether md, the metadata of the object an intent
// names, holds the intent's sequences: the same first, last and count.
func describes(md map[string]string, in *state.Intent) bool {
	return md[objstore.MetaFirstSeq] == strconv.FormatUint(in.Seqs.First(), 10) &&
		md[objstore.MetaLastSeq] == strconv.FormatUint(in.Seqs.Last(), 10) &&
		md[objstore.MetaCount] == strconv.Itoa(in.Seqs.Len())
}
