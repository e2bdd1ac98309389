package exporter

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/state"
)

// The export record (with the intents) says what is exported; a consumer
// says only where deliveries go on. jetlake treats its consumer as a
// cursor it can rebuild from the record at any time: a consumer that is
// missing (deleted by an operator, or a memory consumer a server restart
// lost) is created again delivering from the first sequence the record
// does not hold, and a consumer that would never deliver a sequence the
// stream holds and the record does not (re-created by someone else with
// deliver policy new, acked by another client, reset past it) is moved
// back to it. deliver_policy only says where a connector without a record
// starts.

// cursor is what the runner keeps about the consumer a stream is read
// through. Only the runner goroutine uses it.
type cursor struct {
	cons    jetstream.Consumer
	cc      jetstream.ConsumeContext // the pulls; nil when not pulling
	drained bool                     // the last delivery said the consumer had nothing more to deliver
	// A problem the pulls reported, for the loop to look into: set by
	// the pulls, taken by the loop.
	pullTrouble atomic.Pointer[string]
	// When the consumer this instance re-created for a partition it holds
	// was created: the first pin confirmed on it follows on (followsOn).
	remade time.Time

	// Why the consumer can not be pulled, or "". It is looked up beside
	// the loop, and re-created when it is missing.
	stalled  string
	checking bool      // the consumer is being looked up or moved beside the loop
	checked  time.Time // when it was last looked up

	// The lowest sequence a walk found in the stream that the record
	// does not hold, and since when: one the consumer delivered that does
	// not come back within twice AckWait is one it will never deliver.
	stuck      uint64
	stuckSince time.Time

	// On a pinned consumer read ack-less: whether the unpinned chore has
	// looked yet, and found it pinned to nobody with messages behind (see
	// unpinnedChore). An instance not active is idle only once it looked
	// and found none.
	lookedUnpinned, behind bool

	pulls uint64        // the pulls started, counted: a delivery names its own
	order deliveryOrder // the last delivery of the pulls the book classified
}

// deliveryOrder is the last delivery the book classified, as the server
// sent it. A consumer delivers the messages of its subjects in stream
// order, so a delivery that directly follows it (the next consumer
// sequence, from the same pull) says that no message of those subjects
// lay between the two. Nothing else says so: a delivery taken in again
// after it waited, one of another pull, one after a reset (consumer
// sequences start at 1 again; deliveries sent before it may still be on
// their way) or after one lost on the way.
type deliveryOrder struct{ pull, cseq, seq uint64 }

// next records d, with metadata md, as the last delivery, and returns the
// sequence it directly follows, or 0.
func (o *deliveryOrder) next(d delivery, md jsclient.AckInfo) uint64 {
	if d.pull == 0 {
		return 0
	}
	var after uint64
	if d.pull == o.pull && o.cseq != 0 && md.ConsumerSeq == o.cseq+1 && md.StreamSeq > o.seq {
		after = o.seq
	}
	*o = deliveryOrder{pull: d.pull, cseq: md.ConsumerSeq, seq: md.StreamSeq}
	return after
}

// consumerCheckEvery is how often the consumer of a stream that can not
// pull is looked up.
const consumerCheckEvery = 2 * time.Second

// Reasons a consumer was rebuilt, as jetlake_consumer_rebuilds_total counts
// them.
const (
	rebuildMissing = "missing"    // the consumer was not there: created from the record
	rebuildSkips   = "skips"      // it would not deliver sequences the record lacks: moved back
	rebuildStorage = "storage"    // consumer_storage asks for the other storage
	rebuildAcks    = "ack_policy" // the stream's read mode asks for another ack policy
	rebuildBehind  = "behind"     // read ack-less, it had delivered sequences the record lacks: moved back
)

// ackLessSettle is how long a sequence an ack-less consumer delivered and
// the ledger lacks stays so, across walks, before the consumer is moved
// back to it: a delivery can still be on its way to the loop when a walk
// reads where the consumer is.
const ackLessSettle = 2 * time.Second

// pulling reports whether the runner pulls s now: a partition only while
// its lease is held and it is not being handed over.
func (s *streamWriter) pulling() bool {
	p := s.part
	return p == nil || p.rev != 0 && !p.handing && !p.lost
}

// notePullTrouble takes the problems the pulls reported: such a stream is
// stalled until its consumer is found, or re-created when it is missing
// (consumerChore).
func (r *runner) notePullTrouble(now time.Time) {
	changed := false
	for _, s := range r.streams {
		changed = s.notePullTrouble(now) || changed
	}
	if changed {
		r.holdings()
	}
}

// notePullTrouble takes the problem the writer's pulls reported, if any:
// the stream is stalled from now. It reports whether it was stalled anew.
func (s *streamWriter) notePullTrouble(now time.Time) bool {
	why := s.cur.pullTrouble.Swap(nil)
	c := &s.cur
	if why == nil || c.stalled != "" || !s.pulling() {
		return false
	}
	// Looked up after a moment: a pull problem often passes (a
	// reconnect, a leader election).
	c.stalled, c.checked = *why, now
	return true
}

// consumerChore looks up, beside the loop, the consumer of stalled s every
// consumerCheckEvery, and re-creates it from the export record when it is
// missing. Never while the cursor is being moved.
func (s *streamWriter) consumerChore() *chore {
	c := &s.cur
	return &chore{
		name: "consumer",
		due: func(now time.Time, final bool) bool {
			return !final && s.pulling() && c.stalled != "" && !c.checking && now.Sub(c.checked) >= consumerCheckEvery
		},
		start: func(time.Time) choreWork {
			c.checking = true
			from := s.resumeFrom()
			return func(ctx context.Context) (func(), error) {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				cons, made, err := s.findConsumer(cctx, from)
				cancel()
				return func() { s.consumerChecked(cons, made, err) }, err
			}
		},
	}
}

// resumeFrom returns the first sequence s's ledger does not hold, or 0
// before s has a ledger (a pinned consumer this instance is not pinned to):
// the record's floor says then.
func (s *streamWriter) resumeFrom() uint64 {
	l := s.book.Ledger()
	if l == nil {
		return 0
	}
	return l.Floor() + 1
}

// consumerChecked applies the look-up of a stalled stream's consumer: a
// consumer that was re-created, here or by someone else, is pulled afresh;
// one that is the same ends the stall (the problem was passing), and the
// pulls report again if it was not.
func (s *streamWriter) consumerChecked(cons jetstream.Consumer, made bool, err error) {
	c := &s.cur
	c.checking, c.checked = false, time.Now()
	if !s.pulling() {
		c.stalled = ""
		s.hub.holdings()
		return
	}
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		s.hub.fail(fmt.Errorf("stream %s, consumer %s: %w: %w", s.cfg.Stream, s.cfg.Consumer, ErrConsumerDeleted, err))
	case err != nil:
		c.stalled = err.Error()
		s.log.Warn("a consumer can not pull", s.logAttrs("error", err)...)
	case made:
		s.log.Warn("the consumer was missing: re-created from the export record", s.logAttrs(
			"deliver_from", cons.CachedInfo().Config.OptStartSeq)...)
		s.rebuilt(rebuildMissing)
		s.book.Rewound()
		if s.part != nil {
			s.cur.remade = cons.CachedInfo().Created
			s.fence.pins.await()
		}
		s.repull(cons)
	case !cons.CachedInfo().Created.Equal(s.consCreated()):
		// Someone else re-created it: pulled afresh, and the next walk
		// tells whether it skips what the record lacks.
		s.log.Warn("the consumer was re-created by someone else; pulling it afresh", s.logAttrs()...)
		s.book.Rewound()
		s.repull(cons)
	case s.cur.cc != nil && ended(s.cur.cc):
		// The same consumer, but the pulls ended on a problem (a request
		// the server refused): pulled again.
		s.log.Warn("the pulls ended; pulling again", s.logAttrs("problem", c.stalled)...)
		s.repull(cons)
	default:
		c.stalled = ""
	}
	s.hub.holdings()
}

// repull stops the pulls of s's consumer and pulls cons instead.
func (s *streamWriter) repull(cons jetstream.Consumer) {
	if s.cur.cc != nil {
		s.cur.cc.Stop()
		s.cur.cc = nil
	}
	s.cur.cons = cons
	if s.hub.pull(s) == nil {
		s.cur.stalled = ""
	}
}

// ended reports whether the pulls cc stand for have ended.
func ended(cc jetstream.ConsumeContext) bool {
	select {
	case <-cc.Closed():
		return true
	default:
		return false
	}
}

// consCreated is when the consumer s pulls was created.
func (s *streamWriter) consCreated() time.Time {
	if s.cur.cons == nil {
		return time.Time{}
	}
	if info := s.cur.cons.CachedInfo(); info != nil {
		return info.Created
	}
	return time.Time{}
}

// rebuilt counts a rebuild of s's consumer.
func (s *streamWriter) rebuilt(reason string) {
	s.sn.m.ConsumerRebuilds.WithLabelValues(s.sn.cfg.Name, s.cfg.Stream, reason).Inc()
}

// logAttrs returns the stream and consumer of s (and its partition) for a
// log line, followed by more.
func (s *streamWriter) logAttrs(more ...any) []any {
	out := []any{"stream", s.cfg.Stream, "consumer", s.cfg.Consumer}
	if s.part != nil {
		out = append(out, "partition", s.part.k)
	}
	return append(out, more...)
}

// findConsumer returns the consumer of s, re-created (made) when it is
// missing. It delivers from from, the first sequence the runner's ledger
// does not hold, or, with from 0, from after the export record's floor:
// what the record names above it is acked without being written again when
// it comes back. Without a record of this stream it starts where the
// connector's deliver_policy says.
func (s *streamWriter) findConsumer(ctx context.Context, from uint64) (jetstream.Consumer, bool, error) {
	return jsclient.Find(ctx, s.stream, s.sn.cfg.Name, s.cfg, func(ctx context.Context) (uint64, error) {
		if from != 0 {
			return from, nil
		}
		return s.recordStart(ctx)
	})
}

// recordStart returns the first sequence s's export record (with what the
// record checked at set-up says) does not hold: every
// sequence below it is exported. 0 when there is no record of this stream,
// or when the record claims sequences the stream never had and is not
// believed.
func (s *streamWriter) recordStart(ctx context.Context) (uint64, error) {
	if s.sn.intents == nil {
		return 0, nil
	}
	rec, _, err := state.LoadRecord(ctx, s.sn.intents, s.record.key)
	var bad *state.UnreadableRecordError
	switch {
	case errors.As(err, &bad):
		rec = nil
	case err != nil:
		return 0, err
	}
	var floor uint64
	have := false
	if rec != nil {
		si, err := s.stream.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("stream info: %w", err)
		}
		if state.Judge(rec, s.created, si.State.LastSeq) == state.Believed {
			floor, have = rec.Floor, true
		}
	}
	if r := s.checkedRecord(); r != nil && r.Claims() > 0 {
		floor, _ = state.Merged(floor, nil, r)
		have = true
	}
	if !have {
		return 0, nil
	}
	return floor + 1, nil
}

// checkCursor compares what a walk found with where the consumer is: the
// lowest sequence the stream holds and the ledger lacks must be one the
// consumer still delivers. One at or below its ack floor never comes
// back; nor does one it delivered that has not come back within twice
// AckWait (acked by another client); nor, read ack-less, one it delivered
// at all, once it stayed so past ackLessSettle (a batch not stored, a
// delivery this instance left). The consumer is then moved back to it.
func (s *streamWriter) checkCursor(ctx context.Context, res *walkResult, now time.Time) {
	c := &s.cur
	var q uint64
	for _, e := range res.existing {
		if s.book.Ledger().IsHole(e) {
			q = e
			break
		}
	}
	var why string
	switch {
	case q == 0 || res.ackFloor == 0 && res.delivered == 0:
		c.stuck = 0
		return
	case s.mode.AckLess && q <= res.delivered && q == c.stuck && now.Sub(c.stuckSince) >= ackLessSettle:
		why = fmt.Sprintf("sequence %d, which the stream holds and the export record does not, was delivered to a consumer that takes no acks and never delivers it again", q)
	case s.mode.AckLess:
		if q != c.stuck || q > res.delivered {
			c.stuck, c.stuckSince = q, now
		}
		return
	case q <= res.ackFloor:
		why = fmt.Sprintf("the consumer's ack floor %d is past sequence %d, which the stream holds and the export record does not", res.ackFloor, q)
	case q <= res.delivered && q == c.stuck && now.Sub(c.stuckSince) > 2*s.cfg.AckWait:
		why = fmt.Sprintf("sequence %d, which the stream holds and the export record does not, was delivered and has not come back in twice ack_wait", q)
	default:
		if q != c.stuck {
			c.stuck, c.stuckSince = q, now
		}
		return
	}
	s.moveBack(ctx, q, why, rebuildSkips)
}

// moveBack moves s's consumer back to sequence q, which the ledger lacks,
// beside the loop: once mayMove allows it, and one move at a time (a
// request while one is under way is left to the next walk). reason is the
// rebuild it counts as.
func (s *streamWriter) moveBack(ctx context.Context, q uint64, why, reason string) {
	c := &s.cur
	if c.checking {
		return
	}
	c.checking = true
	cons, pin, proven := s.cur.cons, s.fence.pin, s.book.Ledger().Floor()+1
	s.hub.beside(func() func() {
		mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if held, err := s.mayMove(mctx, pin, q); err != nil || held != "" {
			return func() { s.cursorKept(q, held, err) }
		}
		moved, err := jsclient.Move(mctx, s.sn.js, s.stream, s.sn.cfg.Name, s.cfg, cons, q, proven)
		return func() { s.cursorMoved(moved, q, why, reason, err) }
	})
}

// rewindAtStart moves s's ack-less consumer, at set-up and before it is
// pulled, back to the first sequence the ledger lacks, when it delivered
// it already (info says how far it did): after a crash, what it delivered
// to the process before and that was not exported comes again.
func (s *streamWriter) rewindAtStart(ctx context.Context, info *jetstream.ConsumerInfo) error {
	q := s.firstHole()
	if q == 0 || q > info.Delivered.Stream {
		return nil
	}
	moved, err := jsclient.Move(ctx, s.sn.js, s.stream, s.sn.cfg.Name, s.cfg, s.cur.cons, q, s.book.Ledger().Floor()+1)
	if err != nil {
		return fmt.Errorf("stream %s, consumer %s: move back to sequence %d: %w", s.cfg.Stream, s.cfg.Consumer, q, err)
	}
	if moved != nil {
		s.cur.cons = moved
	}
	s.rebuilt(rebuildBehind)
	s.log.Info("the consumer takes no acks: it delivers again from the first sequence the export record lacks", s.logAttrs(
		"deliver_from", q, "delivered", info.Delivered.Stream)...)
	return nil
}

// firstHole is where s's ack-less consumer goes back to: the first
// sequence the ledger lacks, or the first of an unresolved intent if
// lower (its messages come again, and wait for the intent); 0 when there
// is neither.
func (s *streamWriter) firstHole() uint64 {
	l := s.book.Ledger()
	if l == nil {
		return 0
	}
	var q uint64
	if l.HasHoles() {
		q = l.Holes()[0].First
	}
	for _, u := range s.unsure {
		if f := u.in.Seqs.First(); f != 0 && (q == 0 || f < q) {
			q = f
		}
	}
	return q
}

// rewindAfter moves s's ack-less consumer back, from the loop, when
// sequences it delivered return to the ledger without being stored (a
// batch not stored, a takeover that started a new ledger): the server
// never delivers them again by itself. Only to a sequence below below
// (0: any): the consumer delivers the ones from below on to this instance
// still. A consumer that takes acks redelivers them.
func (s *streamWriter) rewindAfter(ctx context.Context, why string, below uint64) {
	if !s.mode.AckLess || !s.pulling() {
		return
	}
	if q := s.firstHole(); q != 0 && (below == 0 || q < below) {
		s.moveBack(ctx, q, why, rebuildBehind)
	}
}

// mayMove asks, beside the loop, whether s's consumer may be moved back to
// sequence q, which the runner's ledger lacks: only by the instance the
// server has pinned (pin, on a pinned consumer), and only when the export
// record in the state bucket lacks q too. The ledger is a copy in memory,
// which stops when the pin moves to another instance and misses what that
// one exports since. It returns why the consumer stays, or "".
func (s *streamWriter) mayMove(ctx context.Context, pin string, q uint64) (string, error) {
	if s.cfg.Failover == config.FailoverPinned && s.sn.js != nil {
		pinned, err := jsclient.Pinned(ctx, s.sn.js, s.cfg.Stream, s.cfg.Consumer)
		if err != nil {
			return "", fmt.Errorf("which instance is pinned: %w", err)
		}
		if pin == "" || pinned != pin {
			return "this instance is not pinned to the consumer", nil
		}
	}
	if s.sn.intents == nil {
		return "", nil
	}
	rec, _, err := state.LoadRecord(ctx, s.sn.intents, s.record.key)
	var bad *state.UnreadableRecordError
	switch {
	case errors.As(err, &bad):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read the export record: %w", err)
	}
	if rec != nil && rec.StreamCreated.Equal(s.created) && (q <= rec.Floor || rec.Done.Has(q)) {
		return fmt.Sprintf("the export record in the state bucket holds sequence %d", q), nil
	}
	return "", nil
}

// cursorKept applies a look-up that left s's consumer where it is: q is
// looked for again by the next walk.
func (s *streamWriter) cursorKept(q uint64, why string, err error) {
	c := &s.cur
	c.checking, c.stuck = false, 0
	if err != nil {
		s.log.Warn("could not tell whether the consumer may be moved back; trying again", s.logAttrs("sequence", q, "error", err)...)
		return
	}
	s.log.Debug("the consumer is not moved back", s.logAttrs("sequence", q, "why", why)...)
}

// cursorMoved applies a move of s's consumer back to sequence from: a
// consumer that was deleted and created again (moved not nil) is pulled
// afresh. reason is the rebuild it counts as.
func (s *streamWriter) cursorMoved(moved jetstream.Consumer, from uint64, why, reason string, err error) {
	c := &s.cur
	c.checking, c.stuck = false, 0
	if err != nil {
		s.log.Warn("the consumer would not deliver sequences the export record lacks, and could not be moved back; trying again", s.logAttrs(
			"found", why, "error", err)...)
		return
	}
	s.log.Warn("the consumer would not deliver sequences the export record lacks: it delivers from the first of them now", s.logAttrs(
		"found", why, "deliver_from", from)...)
	s.rebuilt(reason)
	// The messages from `from` on come again as first deliveries, those
	// of batches stored here among them.
	s.book.Rewound()
	if moved != nil && s.pulling() {
		s.repull(moved)
	}
}
