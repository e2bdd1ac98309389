package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/lossmarker"
)

// committed is a stored batch whose intent is kept: its messages may come
// back and must then be acked, not written again.
type committed struct {
	intentKey string
	last      uint64 // highest sequence: the intent is forgotten once the ack floor passes it

	// A batch whose acks were confirmed keeps its sequences here: the
	// server confirms the last ack, but when its consumer leader changed
	// while the acks went out, earlier ones can be lost, and their
	// messages come back. expand moves them to the committed set then.
	first uint64
	seqs  []byte // seqSet.MarshalJSON, until expanded
}

// setupStream makes sure the consumer exists, records the stream's
// identity, recovers the intents left by an earlier process, and resets the
// consumer to its ack floor so unacked messages come back at once.
func (e *Exporter) setupStream(ctx context.Context, js jetstream.JetStream, s *streamState) error {
	cons, err := ensureConsumer(ctx, js, e.cfg, s.cfg)
	if err != nil {
		return err
	}
	stream, err := js.Stream(ctx, s.cfg.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", s.cfg.Stream, err)
	}
	si := stream.CachedInfo()
	s.cons = cons
	s.stream = stream
	s.created = si.Created.UTC()
	s.intentPrefix = intentPrefix(e.cfg.Name, s.cfg.Stream, s.cfg.Consumer)
	clear(s.committed)
	clear(s.unresolved)
	clear(s.pending)
	s.retired = nil
	s.startMarkers = nil
	s.recovered = 0
	if s.cfg.Failover != config.FailoverPinned {
		// A pinned consumer recovers once this instance is pinned: a
		// standby must not touch what the active one is doing.
		if err := e.recover(ctx, s); err != nil {
			return err
		}
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s, consumer %s: %w", s.cfg.Stream, s.cfg.Consumer, err)
	}
	s.gapCheck = config.FiltersCover(s.cfg.Subjects, si.Config.Subjects)
	s.next = 0
	if info.Delivered.Stream > 0 {
		s.next = info.Delivered.Stream + 1
	}
	if !s.gapCheck && si.State.FirstSeq > info.Delivered.Stream+1 && info.Delivered.Stream > 0 {
		// A filtered consumer can not tell which of the removed messages
		// matched its filter; the marker names the whole range.
		s.startMarkers = append(s.startMarkers, &lossmarker.Marker{
			Stream: s.cfg.Stream, Consumer: s.cfg.Consumer,
			FirstSeq: info.Delivered.Stream + 1, LastSeq: si.State.FirstSeq - 1,
			Count:  si.State.FirstSeq - 1 - info.Delivered.Stream,
			Reason: lossmarker.Gap,
			Error: fmt.Sprintf("the stream's first sequence is %d: messages after %d were removed before they were exported; "+
				"the consumer is filtered, so the range may also hold messages of other subjects", si.State.FirstSeq, info.Delivered.Stream),
		})
	}
	if info.NumAckPending > 0 && s.cfg.Failover != config.FailoverPinned {
		// Pending messages would come back only after AckWait, interleaved
		// with new ones; a reset replays them now and in order. Never on a
		// pinned consumer: another instance may be pinned and working.
		if _, err := js.ResetConsumer(ctx, s.cfg.Stream, s.cfg.Consumer); err != nil {
			e.log.Info("consumer reset not available; unacked messages return after AckWait",
				"stream", s.cfg.Stream, "consumer", s.cfg.Consumer, "error", err)
		}
	}
	return nil
}

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
	known := map[string]bool{}
	for _, c := range s.retired {
		known[c.intentKey] = true
	}
	for ikey := range s.own {
		known[ikey] = true
	}
	for ikey := range s.unresolved {
		known[ikey] = true
	}
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
			s.await(ikey, &in, time.Now().Add(resolveAfter(s.cfg.AckWait)))
		case err != nil:
			return err
		case md[MetaIntent] != in.ID:
			return &CollisionError{Key: in.Key, Intent: md[MetaIntent], Stream: md[MetaStream], StreamCreated: md[MetaStreamCreated]}
		default:
			e.log.Info("recovery: batch was stored; its messages are acked when they come back", "key", in.Key, "messages", in.Seqs.Len())
			s.commit(ikey, in.Seqs)
			s.recovered++
		}
	}
	return nil
}

// resolveAfter is how long an intent without its object stays unresolved: a
// writer that stalled lets the messages' AckWait pass and then abandons the
// batch, but a PUT it had already sent can still land within one attempt's
// timeout.
func resolveAfter(ackWait time.Duration) time.Duration {
	return attemptTimeout(ackWait) + 2*time.Second
}

// unresolved is an intent whose object was missing when it was found.
type unresolved struct {
	key      string
	in       *intent
	deadline time.Time
	waiting  map[uint64]delivery // its messages, delivered meanwhile, by sequence
}

// await records an unresolved intent.
func (s *streamState) await(ikey string, in *intent, deadline time.Time) {
	u := &unresolved{key: ikey, in: in, deadline: deadline}
	s.unresolved[ikey] = u
	in.Seqs.All(func(q uint64) { s.pending[q] = u })
}

// commit remembers a stored batch whose acks are not confirmed: its
// messages are acked when they come back.
func (s *streamState) commit(ikey string, seqs seqSet) {
	c := &committed{intentKey: ikey, last: seqs.Last()}
	seqs.All(func(q uint64) { s.committed[q] = c })
	s.retire(c)
}

// expandRetired makes the sequences of every confirmed batch whose range
// holds seq committed, so that a message coming back after its ack was
// lost is acked again, not written again. Only redelivered messages need
// this.
func (s *streamState) expandRetired(seq uint64) {
	for _, c := range s.retired {
		if len(c.seqs) == 0 || seq < c.first || seq > c.last {
			continue
		}
		var set seqSet
		if err := set.UnmarshalJSON(c.seqs); err == nil {
			set.All(func(q uint64) { s.committed[q] = c })
		}
		c.seqs = nil
	}
}

// retire keeps a stored batch's intent until the consumer's ack floor passes
// the batch. Deleting it sooner would be wrong: a consumer reset after a
// crash replays acked messages above the floor, and the intent is what tells
// recovery they are stored.
func (s *streamState) retire(c *committed) {
	s.retired = append(s.retired, c)
}
