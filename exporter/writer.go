package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// streamWriter exports one configured stream (or one partition of a
// partitioned entry): it admits and classifies the stream's deliveries,
// keeps its cursor, fence and takeover, walks the stream against its
// ledger and writes its export record. What every writer of a run shares,
// memory, the order of the upload queue and the uploaders, is the
// runner's: a writer asks for it through its hub. Set up before the runner
// starts; afterwards only the runner goroutine changes it, and uploaders
// read only cfg, created and intentPrefix.
type streamWriter struct {
	sn  *session     // the connection, state bucket and sink it writes through
	hub hub          // the runner's shared services
	log *slog.Logger // the session's

	cfg          config.Stream
	created      time.Time // the stream's creation time: with its name, its identity
	intentPrefix string

	// What is known of each sequence delivered and of the stream's
	// export; the Ledger within is compared with the stream by walks
	// beside the runner, and starts once recovery ran (on a pinned
	// consumer, once this instance is pinned).
	book      progress.Book
	unsure    map[string]*unresolved // intents whose object was missing, by intent key
	recovered int                    // intents recovered at start
	fence     pinState               // on a pinned consumer: which instance is pinned, and the takeover

	// A partition of a partitioned entry: its lease and handover, and the
	// consumer name of the entry, which object keys show instead of the
	// partition's. nil and "" when the entry is not partitioned.
	part *partition
	base string
	jobs int // batches and markers of the stream queued or uploading

	m      streamMetrics
	newest time.Time // timestamp of the newest exported message

	poisoned *job // a poison marker that consecutive poison messages may still join
	// The messages of batches whose key the store refused, rejected when
	// they come back (keyRefused).
	refused map[uint64]error

	cur    cursor       // the consumer, pulled, and as a cursor rebuilt from the record
	record exportRecord // the export record: its key, what was written, the walks
	chores streamChores // the stream's work beside the loop

	filtered bool             // the consumer sees only some of the stream's subjects
	retained bool             // work-queue or interest retention: see progress.Ledger.Retain
	stream   jetstream.Stream // for walks
	// How the stream is read: without acks (limits retention), the
	// consumer a position the runner moves back from its ledger, or with
	// an ack for every message.
	mode jsclient.ReadMode
}

// exportRecord is a stream's export record as the runner keeps it: where
// it is in the state bucket, which ledger revision was last written, how
// soon the ledger's holes are walked again, and the record rebuilt from
// the lake at set-up.
type exportRecord struct {
	key       string        // in the state bucket
	savedRev  uint64        // the ledger revision last written
	walkEvery time.Duration // how soon holes are walked again
	// The export record checked at set-up: rebuilt from the lake, or
	// confirmed there by the consumer or the lake (see checkRecord); nil
	// when there was none. True whatever the bucket says since.
	checked *state.Record
}

// hub is what a stream writer asks of the runner, which every writer of
// the run shares.
type hub interface {
	// beside runs work beside the loop and applies its result on it.
	beside(work func() func())
	// add takes a delivery in again: one parked or waiting.
	add(ctx context.Context, d delivery)
	// takeArrived takes in the deliveries queued for the loop already.
	takeArrived(ctx context.Context)
	// enqueue queues a loss marker for the uploaders.
	enqueue(j *job)
	// forget queues intents to delete.
	forget(keys []string)
	// pull starts pulling the writer's consumer into the loop.
	pull(s *streamWriter) error
	// fail ends the run with err.
	fail(err error)
	// holdings refreshes what the exporter says of the partitions held
	// and the streams stalled.
	holdings()
	// stopping reports whether the run is on its way out.
	stopping() bool
}

// newStreamWriter returns the writer of the stream (or partition) cfg,
// not yet set up.
func newStreamWriter(sn *session, cfg config.Stream) *streamWriter {
	return &streamWriter{sn: sn, log: sn.log, cfg: cfg, m: sn.streamMetrics(cfg.Stream)}
}

// consumerName is the consumer of the [[streams]] entry: for a partition,
// the entry's, not the partition's own.
func (s *streamWriter) consumerName() string {
	if s.base != "" {
		return s.base
	}
	return s.cfg.Consumer
}

// subject is the subject msg was published on: for a partition, without
// the partition token the stream's transform put in front.
func (s *streamWriter) subject(msg jetstream.Msg) string {
	if s.part != nil {
		return config.StripPartition(msg.Subject())
	}
	return msg.Subject()
}

// delivery is a message handed from a puller to the runner.
type delivery struct {
	stream int // index into runner.streams
	msg    jetstream.Msg
	// pull counts the pulls of the stream's consumer, the one that
	// delivered msg; 0 for a delivery taken in again after it waited,
	// out of the order the server sent it in.
	pull uint64
}

// setupStream makes sure the consumer exists (created from the export
// record when it is missing), records the stream's identity, recovers the
// intents left by an earlier process, and moves the consumer back so that
// what was delivered and not exported comes back at once: to its ack
// floor, or, read ack-less, to the first sequence the ledger lacks. An
// export record that is missing or in doubt is rebuilt from the lake
// first (see checkRecord).
//
// Each step runs within attempt, one try of the set-up; the record's
// check within run: a large lake takes longer to list than an attempt may
// last, and each NATS request within it has its own timeout.
func (s *streamWriter) setupStream(run, attempt context.Context) error {
	ctx := attempt
	stream, err := s.sn.js.Stream(ctx, s.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return &jsclient.ConfigError{Stream: s.cfg.Stream, Msg: "stream not found: create it, or fix " + jsclient.StreamKey(s.sn.cfg, s.cfg) + ".stream"}
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", s.cfg.Stream, err)
	}
	si := stream.CachedInfo()
	s.stream = stream
	s.created = si.Created.UTC()
	s.intentPrefix = statekey.StreamIntents(s.sn.cfg.Name, s.cfg.Stream, s.cfg.Consumer)
	s.mode = jsclient.ModeFor(si.Config.Retention)
	s.record.key = statekey.Record(s.sn.cfg.Name, s.cfg.Stream, s.cfg.Consumer)
	if s.sn.stateReplicas > 0 && s.sn.stateReplicas < si.Config.Replicas {
		s.log.Warn("the state bucket has fewer replicas than the stream: an outage the stream survives can lose the export records and intents",
			"bucket", s.sn.cfg.State.Bucket, "bucket_replicas", s.sn.stateReplicas, "stream", s.cfg.Stream, "stream_replicas", si.Config.Replicas,
			"fix", "state.replicas (for a bucket jetlake creates), or nats stream edit KV_"+s.sn.cfg.State.Bucket+" --replicas")
	}
	if err := s.checkRecord(run); err != nil {
		return fmt.Errorf("stream %s, consumer %s: export record: %w", s.cfg.Stream, s.cfg.Consumer, err)
	}
	from, err := s.recordStart(ctx)
	if err != nil {
		return fmt.Errorf("stream %s, consumer %s: export record: %w", s.cfg.Stream, s.cfg.Consumer, err)
	}
	cons, did, err := jsclient.Ensure(ctx, stream, s.sn.cfg, s.cfg, from)
	if err != nil {
		return err
	}
	switch {
	case did == jsclient.Made && from > 0:
		s.log.Warn("the consumer was missing: created from the export record", s.logAttrs("record_floor", from-1, "deliver_from", from)...)
		s.sn.m.ConsumerRebuilds.WithLabelValues(s.sn.cfg.Name, s.cfg.Stream, rebuildMissing).Inc()
	case did == jsclient.Rebuilt:
		s.log.Info("the consumer is rebuilt from the export record where consumer_storage says", s.logAttrs(
			"consumer_storage", s.cfg.ConsumerStorage, "deliver_from", cons.CachedInfo().Config.OptStartSeq)...)
		s.sn.m.ConsumerRebuilds.WithLabelValues(s.sn.cfg.Name, s.cfg.Stream, rebuildStorage).Inc()
	case did == jsclient.RebuiltAcks:
		s.log.Info("the consumer had another ack policy than the stream is read with: rebuilt from the export record", s.logAttrs(
			"read", s.mode.String(), "ack_policy", cons.CachedInfo().Config.AckPolicy.String(), "deliver_from", cons.CachedInfo().Config.OptStartSeq)...)
		s.sn.m.ConsumerRebuilds.WithLabelValues(s.sn.cfg.Name, s.cfg.Stream, rebuildAcks).Inc()
	}
	s.cur.cons = cons
	s.resetBook()
	// A partition sees a part of the stream, even partition 0 whose
	// filters include the stream's own subjects: the messages stored
	// before the stream was partitioned.
	s.filtered = s.part != nil || !config.FiltersCover(s.cfg.Subjects, si.Config.Subjects)
	s.retained = si.Config.Retention != jetstream.LimitsPolicy
	s.recovered = 0
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s, consumer %s: %w", s.cfg.Stream, s.cfg.Consumer, err)
	}
	if s.cfg.Failover != config.FailoverPinned {
		// A pinned consumer recovers once this instance is pinned: a
		// standby must not touch what the active one is doing.
		if err := s.recover(ctx); err != nil {
			return err
		}
		start, err := s.loadLedgerStart(ctx)
		if err != nil {
			return err
		}
		s.startLedger(start, s.log)
	}
	if s.cfg.Failover == config.FailoverPinned {
		// Never on a pinned consumer: another instance may be pinned and
		// working. The instance pinned moves it when it takes over.
		return nil
	}
	if s.mode.AckLess {
		return s.rewindAtStart(ctx, info)
	}
	if info.NumAckPending > 0 {
		// Pending messages would come back only after AckWait, interleaved
		// with new ones; a reset replays them now and in order.
		if _, err := s.sn.js.ResetConsumer(ctx, s.cfg.Stream, s.cfg.Consumer); err != nil {
			s.log.Info("consumer reset not available; unacked messages return after AckWait",
				"stream", s.cfg.Stream, "consumer", s.cfg.Consumer, "error", err)
		}
	}
	return nil
}

// ledgerStart is what a ledger starts from: the export record (or, for a
// consumer that has none yet, its ack floor), the stream's first sequence
// and the consumer's delivered sequence.
type ledgerStart struct {
	floor               uint64
	done                []progress.Range
	firstSeq, delivered uint64
}

// loadLedgerStart reads what s's ledger starts from. It reads only what
// does not change after set-up, so it may run beside the loop.
func (s *streamWriter) loadLedgerStart(ctx context.Context) (*ledgerStart, error) {
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The record first: another instance may write it meanwhile, and what
	// it claims must then be below the stream's last sequence read after.
	var rec *state.Record
	var recErr error
	if s.sn.intents != nil {
		rec, _, recErr = state.LoadRecord(ictx, s.sn.intents, s.record.key)
	}
	ci, err := s.cur.cons.Info(ictx)
	if err != nil {
		return nil, fmt.Errorf("stream %s, consumer %s: %w", s.cfg.Stream, s.cfg.Consumer, err)
	}
	si, err := s.stream.Info(ictx)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", s.cfg.Stream, err)
	}
	start := &ledgerStart{floor: jsclient.Proven(ci), firstSeq: si.State.FirstSeq, delivered: ci.Delivered.Stream}
	if s.sn.intents == nil {
		return start, nil
	}
	var bad *state.UnreadableRecordError
	switch err := recErr; {
	case errors.As(err, &bad):
		// Starting from the ack floor loses no export and duplicates
		// nothing; the next write replaces the value.
		s.log.Warn("the export record can not be read; starting from what the consumer (its ack floor, or where jetlake created an ack-less one) and the record checked at start show exported", "stream", s.cfg.Stream, "error", err)
	case err != nil:
		return nil, err
	default:
		switch state.Judge(rec, s.created, si.State.LastSeq) {
		case state.Forged:
			s.log.Error("the export record claims sequences the stream never had: it is not trusted; starting from what the consumer and the record checked at start show exported, and the next write replaces it",
				"stream", s.cfg.Stream, "consumer", s.cfg.Consumer, "record", s.record.key,
				"record_floor", rec.Floor, "record_claims_up_to", rec.Claims(), "stream_last_seq", si.State.LastSeq, "ack_floor", start.floor)
			s.sn.m.Untrusted.WithLabelValues(s.sn.cfg.Name, "export_record").Inc()
		case state.Believed:
			start.floor = rec.Floor
			start.done = append(start.done, rec.Done.Ranges()...)
		case state.Earlier:
			s.log.Warn("the stream was re-created: its export record is of the earlier one", "stream", s.cfg.Stream,
				"record_stream_created", rec.StreamCreated, "stream_created", s.created)
		}
	}
	s.withChecked(start)
	return start, nil
}

// startLedger starts s's ledger from start and from what recovery found in
// the intents. Everything between the floor and the furthest the stream or
// consumer has moved is a hole until a walk tells what the stream still
// holds: a purge moves the consumer's delivered sequence and ack floor past
// what it removed, exported or not.
func (s *streamWriter) startLedger(start *ledgerStart, log *slog.Logger) {
	s.book.Start(start.floor, start.done, start.firstSeq, start.delivered, s.filtered, s.retained)
	s.cur.order = deliveryOrder{}
	l := s.book.Ledger()
	s.record.savedRev = 0
	if l.HasHoles() {
		log.Info("export record: checking sequences not known to be exported", "stream", s.cfg.Stream,
			"floor", l.Floor(), "holes", len(l.Holes()), "first_hole", l.Holes()[0].First)
	}
}

// streamMetrics are the counters of a stream the loop adds to for every
// message, resolved once: their labels are looked up when the stream is set
// up, not per message.
type streamMetrics struct {
	received, redelivered, acked prometheus.Counter
	fallback                     prometheus.Counter // messages whose path fell back to ingest time
}

// streamMetrics returns the counters of stream.
func (e *Exporter) streamMetrics(stream string) streamMetrics {
	return streamMetrics{
		received:    e.m.Received.WithLabelValues(e.cfg.Name, stream),
		redelivered: e.m.Redelivered.WithLabelValues(e.cfg.Name, stream),
		acked:       e.m.Acked.WithLabelValues(e.cfg.Name, stream),
		fallback:    e.m.EventTimeFallback.WithLabelValues(e.cfg.Name, stream),
	}
}

// streamChores are the chores of one stream.
type streamChores struct {
	resolve, walk, save, consumer *chore
	unpinned                      *chore // nil unless the stream is pinned and read ack-less
	release                       *chore // nil when the stream is not a partition
}

// makeChores makes the writer's chores.
func (s *streamWriter) makeChores() streamChores {
	return streamChores{resolve: s.resolveChore(), walk: s.walkChore(), save: s.saveChore(), consumer: s.consumerChore(),
		unpinned: s.unpinnedChore(), release: s.releaseChore()}
}
