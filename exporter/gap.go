package exporter

import (
	"context"
	"math"
	"time"

	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/lossmarker"
)

// How often the runner compares its ledger with the stream: as soon as it
// has holes, and every few seconds regardless, since a purge of an idle
// stream leaves no jump in deliveries to notice.
const (
	walkHoles    = time.Second
	walkIdle     = 5 * time.Second
	saveInterval = time.Second
)

// saveEvery is how often a record with done ranges beyond the floor is
// written: every saveInterval, and less often the more ranges it holds,
// since each write reads, merges and writes them all. A filtered
// consumer's, a partition's above all, holds a range per run of its own
// sequences until walks close the gaps between them. Saving later costs a
// restart more checking, never an export.
func saveEvery(ranges int) time.Duration {
	return min(saveInterval*time.Duration(1+ranges/saveRangesPerSecond), saveIntervalMax)
}

const (
	saveRangesPerSecond = 1024
	saveIntervalMax     = 15 * time.Second
)

// saveResult is the outcome of writing a stream's export record.
type saveResult struct {
	stream *streamWriter
	l      *progress.Ledger
	rev    uint64 // the ledger revision written
	floor  uint64 // the floor the record holds now
	// untrusted is the stored record the write replaced because it
	// claimed sequences the stream never had.
	untrusted *state.UntrustedRecordError
	err       error
}

// lastSeq returns how saveRecord asks for s's last sequence: through a
// stream handle of its own, since the one s keeps serves the walks beside
// the loop.
func (s *streamWriter) lastSeq() state.LastSeqFunc {
	return func(ctx context.Context) (uint64, error) {
		if s.sn.js == nil {
			// Not connected (a test of the runner alone): no bound.
			return math.MaxUint64, nil
		}
		st, err := s.sn.js.Stream(ctx, s.cfg.Stream)
		if err != nil {
			return 0, err
		}
		return st.CachedInfo().State.LastSeq, nil
	}
}

// walkChore compares s's ledger with the stream, beside the loop: as soon
// as it has holes (every walkEvery), and every walkIdle regardless. A
// partition being handed over leaves its walks to the next holder.
func (s *streamWriter) walkChore() *chore {
	c := &chore{name: "walk"}
	c.due = func(now time.Time, final bool) bool {
		l := s.book.Ledger()
		if final || l == nil || s.part != nil && s.part.handing {
			return false
		}
		return l.HasHoles() && now.Sub(c.done) >= s.record.walkEvery || now.Sub(c.done) >= walkIdle
	}
	c.start = func(time.Time) choreWork {
		holes, cons := s.book.Ledger().ToWalk(walkMaxRanges), s.cur.cons
		return func(ctx context.Context) (func(), error) {
			res := s.walk(ctx, cons, holes)
			return func() { res.stream.walked(ctx, res) }, res.err
		}
	}
	return c
}

// saveChore writes s's export record when its ledger moved, every
// saveEvery, and on the way out. A partition being handed over writes its
// record once, when it is drained (releaseChore).
func (s *streamWriter) saveChore() *chore {
	c := &chore{name: "save", keepOnStop: true, atShutdown: true}
	c.due = func(now time.Time, final bool) bool {
		l := s.book.Ledger()
		if l == nil || s.sn.intents == nil || l.Rev() == s.record.savedRev {
			return false
		}
		return final || !(s.part != nil && s.part.handing) && now.Sub(c.done) >= saveEvery(len(l.Done()))
	}
	c.start = func(now time.Time) choreWork {
		l := s.book.Ledger()
		rec, rev := state.LedgerRecord(l, s.created, now), l.Rev()
		return func(ctx context.Context) (func(), error) {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			res := &saveResult{stream: s, l: l, rev: rev}
			res.floor, res.untrusted, res.err = state.SaveRecord(sctx, s.sn.intents, s.record.key, rec, s.lastSeq())
			return func() { s.saved(res) }, res.err
		}
	}
	return c
}

// walked applies a walk's findings: holes the stream no longer holds get
// loss markers (or, for a filtered consumer, are taken for other subjects'
// sequences), and a first sequence that moved past the frontier makes new
// holes, for the next walk.
func (s *streamWriter) walked(ctx context.Context, res *walkResult) {
	if res.err != nil {
		s.log.Warn("could not compare the export record with the stream; trying again", "stream", s.cfg.Stream, "error", res.err)
		return
	}
	l := s.book.Ledger()
	if l == nil {
		return
	}
	if res.pinRead && (s.fence.pin == "" || res.pinned != s.fence.pin) && !(s.part != nil && res.pinned == "") {
		// Pinned to another instance now, which exports what this one's
		// ledger lacks: neither a marker nor a move of the consumer may
		// follow from a ledger that stopped when the pin moved. A
		// partition pinned to nobody (a leader change unpins, and nothing
		// pending pins anyone) is its lease holder's, the only instance
		// that pulls it.
		s.log.Debug("a walk found this instance not pinned; its findings are left to the instance pinned now", s.logAttrs()...)
		return
	}
	lost, headLost := l.Walked(res.scanned, res.existing)
	// Holes the stream still holds come back only when they are
	// redelivered: look again less often while nothing else is found.
	s.record.walkEvery = walkHoles
	if len(lost)+len(headLost) == 0 && len(res.existing) > 0 {
		s.record.walkEvery = walkIdle
	}
	if s.pulling() {
		s.checkCursor(ctx, res, time.Now())
	}
	if res.firstSeq > 0 {
		l.Reach(res.firstSeq-1, true)
	}
	if s.mode.AckLess && s.pulling() {
		// Delivered and never received (lost on the way, as in a
		// consumer leader change): a consumer that takes no acks never
		// sends it again. The next walks tell whether the stream holds
		// it, and checkCursor moves the consumer back to it.
		l.Reach(res.delivered, false)
	}
	for _, m := range lossmarker.Gaps(s.cfg.Stream, s.cfg.Consumer, lost, "the stream removed these sequences before they were exported (limits, a purge or a delete)") {
		s.hub.enqueue(&job{stream: s, marker: m})
	}
	for _, m := range lossmarker.Gaps(s.cfg.Stream, s.cfg.Consumer, headLost, "the stream's first sequence moved past these sequences before they were exported (limits or a purge); "+
		"the consumer is filtered, so they may also hold messages of other subjects") {
		s.hub.enqueue(&job{stream: s, marker: m})
	}
}

// saved applies a written export record: the intents of batches the
// recorded floor has passed are no longer needed.
func (s *streamWriter) saved(res *saveResult) {
	if res.untrusted != nil {
		s.log.Error("the export record held a value jetlake did not write; it was replaced by this process's own", "stream", s.cfg.Stream,
			"consumer", s.cfg.Consumer, "error", res.untrusted)
		s.sn.m.Untrusted.WithLabelValues(s.sn.cfg.Name, "export_record").Inc()
	}
	if res.err != nil {
		s.log.Warn("could not write the export record; trying again", "stream", s.cfg.Stream, "error", res.err)
		return
	}
	if res.l != s.book.Ledger() {
		return // a takeover started another ledger meanwhile
	}
	s.record.savedRev = res.rev
	keys := s.book.PassFloor(res.floor)
	s.hub.forget(s.sn.sink.forgettable(keys))
}
