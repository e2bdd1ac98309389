package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/content"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// RejectReasonHeader is the header that carries, in a rejected message's
// record, why a typed column refused it.
const RejectReasonHeader = "Jetlake-Reject-Reason"

// add buffers one message and seals what its arrival makes due.
func (r *runner) add(ctx context.Context, d delivery) {
	s, md, ok := r.admit(ctx, d)
	if !ok || !r.buffer(d, s, md) {
		return
	}
	if s.nearAckPending() {
		r.sealStream(d.stream, buffer.ReasonPending)
	}
	// Memory: when open buffers hold most of the budget, seal the largest so
	// its upload frees memory; otherwise uploads in flight free it.
	r.relieve()
	r.takeSealed()
}

// admit reads a delivery's JetStream metadata and asks its stream's writer
// whether its message is to be written.
func (r *runner) admit(ctx context.Context, d delivery) (*streamWriter, jsclient.AckInfo, bool) {
	s := r.streams[d.stream]
	msg := d.msg
	r.chores.lastMsg = time.Now()
	md, ok := jsclient.ParseAckReply(msg.Reply())
	if !ok {
		// Not a JetStream message: nothing to ack, nothing to export.
		r.log.Error("message without JetStream metadata", "stream", s.cfg.Stream, "subject", msg.Subject(), "reply", msg.Reply())
		return s, md, false
	}
	return s, md, s.admit(ctx, d, md)
}

// admit reports whether the message of a delivery with metadata md is to
// be written: it acks again what is stored already, and asks the server to
// confirm a pin the stream has not seen.
func (s *streamWriter) admit(ctx context.Context, d delivery, md jsclient.AckInfo) bool {
	a, pin := s.classify(d, md)
	if pin != "" {
		s.confirmPin(ctx, pin)
	}
	if a == admitAckAgain {
		s.ackCommitted(md.StreamSeq, d.msg)
	}
	return a == admitWrite
}

// admission is what a stream makes of a delivery.
type admission uint8

const (
	admitWrite    admission = iota // new: to be written
	admitLeave                     // nothing to do now (see streamWriter.classify)
	admitAckAgain                  // in a stored object or loss marker already: ack it, write nothing
)

// classify classifies a delivery with metadata md: a message is not written
// when it is left to the server, parked for a takeover, waiting for an
// unresolved intent, held already, or stored already. A pinned consumer's
// message that carries a pin the stream has not seen starts a takeover:
// classify returns the pin for the server to confirm, and the stream's
// deliveries are parked until it answers.
func (s *streamWriter) classify(d delivery, md jsclient.AckInfo) (a admission, confirm string) {
	seq := md.StreamSeq
	s.cur.drained = md.Pending == 0
	if s.cfg.Failover == config.FailoverPinned {
		if pin := jsclient.ServerPin(d.msg.Headers()); pin != "" && pin != s.fence.pin && !s.fence.takingOver {
			if pin == s.fence.notPin {
				// A pin the server did not confirm: its messages are
				// another instance's, or come again.
				return admitLeave, ""
			}
			// Maybe pinned just now: the server confirms it before this
			// instance recovers what the previous active one left and
			// exports anything; the stream's deliveries wait meanwhile.
			s.fence.takingOver, confirm = true, pin
			s.fence.pinnedFrom = seq
		}
	}
	if s.fence.takingOver {
		s.fence.parked = append(s.fence.parked, d)
		return admitLeave, confirm
	}
	s.m.received.Inc()
	if md.Delivered > 1 {
		s.m.redelivered.Inc()
	}
	switch s.book.Deliver(seq, s.cur.order.next(d, md), md.Delivered > 1) {
	case progress.Unready:
		// Not pinned yet (a message of the pin in flight as it moved):
		// leave it to the server, which redelivers it to the pinned one.
		return admitLeave, ""
	case progress.Waiting:
		s.wait(seq, d)
		return admitLeave, ""
	case progress.Stored:
		return admitAckAgain, ""
	case progress.Holding:
		// Redelivered while we hold it: the copy we hold is acked once
		// stored.
		return admitLeave, ""
	}
	return admitWrite, ""
}

// buffer adds an admitted message to the buffer of its directory (and
// subject, or partition), encoded as it comes. A message that can not be
// encoded is rejected (a type error) or poisoned; buffer then reports
// false.
func (r *runner) buffer(d delivery, s *streamWriter, md jsclient.AckInfo) bool {
	msg := d.msg
	seq, ts := md.StreamSeq, time.Unix(0, md.Timestamp)
	out := &r.cfg.Output
	r.intake.rec = formats.Record{
		Stream:   s.cfg.Stream,
		Subject:  s.subject(msg),
		Sequence: seq,
		Time:     ts,
		Data:     msg.Data(),
	}
	if out.IncludeHeaders {
		r.intake.rec.Headers = msg.Headers()
	}
	if int64(len(r.intake.rec.Data)) > r.opts.MaxObjectSize-64<<10 {
		r.poison(s, msg, fmt.Errorf("message of %d bytes can not fit in an object of at most %d bytes", len(r.intake.rec.Data), r.opts.MaxObjectSize))
		return false
	}
	if why := s.takeRefused(seq); why != nil {
		r.reject(d.stream, s, msg, why)
		return false
	}
	r.intake.tplVals = pathtemplate.Values{Stream: s.cfg.Stream, Subject: r.intake.rec.Subject, Consumer: s.consumerName(), Time: ts}
	if c := r.content; c != nil {
		fellBack, err := c.Read(r.intake.rec.Data, msg.Headers(), ts, &r.intake.tplVals)
		if err != nil {
			r.reject(d.stream, s, msg, err)
			return false
		}
		if fellBack {
			s.m.fallback.Inc()
		}
	}
	var vals []formats.Value // the typed columns a table's partition reads
	if r.content != nil {
		vals = r.content.Values()
	}
	r.intake.dirBuf = r.sink.appendDir(r.intake.dirBuf[:0], &r.intake.tplVals, seq, ts, vals)
	if !r.dirs.admit(r.intake.dirBuf, r.chores.lastMsg) {
		r.reject(d.stream, s, msg, &CardinalityError{Dir: string(r.intake.dirBuf), Max: r.dirs.max})
		return false
	}
	// A group starts with the stream's index, so that two [[streams]]
	// entries never share a buffer.
	r.intake.grpBuf = strconv.AppendInt(r.intake.grpBuf[:0], int64(d.stream), 10)
	r.intake.grpBuf = append(r.intake.grpBuf, 0)
	r.intake.grpBuf = r.sink.appendGroup(r.intake.grpBuf, r.intake.dirBuf, r.intake.rec.Subject)
	ref := jsclient.AckRef(msg.Reply())
	if err := r.set.Add(r.intake.grpBuf, r.intake.dirBuf, &r.intake.rec, r.intake.rec.Sequence, r.intake.rec.Time, ref, r.chores.lastMsg); err != nil {
		var te *formats.TypeError
		if errors.As(err, &te) {
			r.reject(d.stream, s, msg, err)
			return false
		}
		r.poison(s, msg, err)
		return false
	}
	r.mem.heldMem += ref.Mem()
	r.intake.rec = formats.Record{}
	r.dispatchChunks()
	return true
}

// relieve keeps memory within the budget: when open buffers hold most of it,
// it seals the largest so its upload frees memory; otherwise the uploads in
// flight free it, and pulling waits. It seals already at three quarters of
// the budget when nothing is being uploaded, so that the upload runs while
// pulling goes on instead of stopping it.
func (r *runner) relieve() {
	open := r.openMem()
	total := open + r.up.inflightBytes + r.mem.heldMem
	if total > r.mem.peak {
		r.mem.peak = total
		r.mem.mPeak.Set(float64(total))
	}
	if total >= r.mem.budget && open >= r.up.inflightBytes || total >= r.mem.budget/4*3 && r.up.inflight == 0 {
		// The largest batches, until a 32nd of the budget is freed: one
		// pass over the open batches, where sealing them one at a time
		// would cost a pass per message with many small batches. Rejected
		// messages first when they hold more: a flood of them must not
		// seal the data's buffers early, an object of a few messages
		// each.
		first, then := r.set, r.rej
		if r.rej.Mem() > r.set.Mem() {
			first, then = r.rej, r.set
		}
		if first.SealLargestUntil(buffer.ReasonMemory, r.mem.budget/32) == 0 {
			then.SealLargestUntil(buffer.ReasonMemory, r.mem.budget/32)
		}
	}
}

// nearAckPending reports whether the writer's held messages near
// MaxAckPending, so that its buffers are to be sealed: the server then
// stops delivering, and buffers waiting for more would wait forever.
// Sealing helps only when open buffers hold most of them; otherwise the
// acks of the uploads in flight make room. Sealing already at three
// quarters when nothing of the stream is being uploaded lets the acks come
// before delivery stops.
func (s *streamWriter) nearAckPending() bool {
	if s.mode.AckLess {
		return false // the server does not count what it delivered
	}
	held, sealed := s.book.Counts()
	limit := s.cfg.MaxAckPending
	return held >= limit-limit/10 && held-sealed >= sealed || held >= limit/4*3 && sealed == 0
}

// sealStream seals most of the open data buffers of the stream of index
// idx (its groups start with it; see buffer).
func (r *runner) sealStream(idx int, why buffer.Reason) {
	prefix := strconv.Itoa(idx) + "\x00"
	r.set.SealMost(why, func(g string) bool { return strings.HasPrefix(g, prefix) })
}

// dispatchChunks hands the chunks the last append filled to the
// compressors. When they are all busy, the runner compresses the chunk
// itself: that is the backpressure.
func (r *runner) dispatchChunks() {
	if r.intake.chunks == nil {
		return
	}
	r.intake.chunkBuf = r.intake.chunks.TakeChunks(r.intake.chunkBuf[:0])
	for i, c := range r.intake.chunkBuf {
		select {
		case r.intake.compress <- c:
		default:
			c.Compress()
		}
		r.intake.chunkBuf[i] = nil
	}
}

// reject sets aside a message a typed column refuses, or one without an
// event time when time_fallback is "reject": it goes, with the reason in
// its headers, to a JSON Lines object under
// <prefix>/_jetlake/rejected/<stream>/<date>/, outside the table folders, and
// is acked once that object is stored.
func (r *runner) reject(idx int, s *streamWriter, msg jetstream.Msg, reason error) {
	rec := r.intake.rec
	r.intake.rec = formats.Record{}
	h := make(map[string][]string, len(rec.Headers)+1)
	for k, v := range rec.Headers {
		h[k] = v
	}
	h[RejectReasonHeader] = []string{reason.Error()}
	rec.Headers = h
	dir := pathtemplate.AppendRejectedDir(nil, s.cfg.Stream, rec.Time)
	// The group ends in the kind of reason, which the metric of rejected
	// messages counts by.
	group := strconv.AppendInt(nil, int64(idx), 10)
	group = append(group, 0)
	kind := rejectKind(reason)
	group = append(group, kind...)
	ref := jsclient.AckRef(msg.Reply())
	if err := r.rej.Add(group, dir, &rec, rec.Sequence, rec.Time, ref, r.chores.lastMsg); err != nil {
		r.poison(s, msg, fmt.Errorf("rejected (%v) and not writable as JSON: %w", reason, err))
		return
	}
	r.mem.heldMem += ref.Mem()
	// Counted for a summary every rejectLogEvery, not logged one by one:
	// a publisher must not set the log's rate.
	r.rejected.add(s.cfg.Stream, kind, rec.Sequence, r.chores.lastMsg)
	if r.log.Enabled(context.Background(), slog.LevelDebug) {
		r.log.Debug("message rejected", "stream", s.cfg.Stream, "subject", rec.Subject, "sequence", rec.Sequence,
			"reason", rejectDetail(reason, r.opts.LogPayloads))
	}
	r.relieve()
	r.takeSealed()
}

// rejectKind is the reason label of jetlake_messages_rejected_total:
// "event_time" for a message without an event time, "cardinality" for one
// beyond max_open_directories, "key" for one whose object key the store
// refused (keyRefused), "type" for a value a typed column refuses.
func rejectKind(reason error) string {
	var ne *content.NoEventTimeError
	var ce *CardinalityError
	switch {
	case errors.As(reason, &ne):
		return "event_time"
	case errors.As(reason, &ce):
		return "cardinality"
	case keyError(reason) != nil:
		return "key"
	}
	return "type"
}

// rejectDetail says why a message was rejected, for the log: without the
// bytes of its payload or headers the reason quotes, unless payloads (the
// operator asked for them: run -log-payloads).
func rejectDetail(reason error, payloads bool) string {
	var ce *CardinalityError
	switch {
	case payloads:
		return reason.Error()
	case errors.As(reason, &ce):
		// The directory is rendered from the payload.
		return fmt.Sprintf("cardinality: one directory more than the %d written at once (max_open_directories)", ce.Max)
	}
	return content.Redacted(reason)
}

// poison records a message that can be written in no form: a loss marker,
// then the message is terminated so it never blocks the consumer.
// Consecutive poison messages share a marker: it waits until the next
// message of the stream that does not continue it, or the next tick.
func (s *streamWriter) poison(msg jetstream.Msg, why error) {
	md, _ := msg.Metadata()
	seq := md.Sequence.Stream
	subject := s.subject(msg)
	if j := s.poisoned; j != nil && j.marker.Subject == subject && j.marker.LastSeq+1 == seq {
		j.marker.LastSeq = seq
		j.marker.Count++
		j.term = append(j.term, jsclient.AckRef(msg.Reply()))
		return
	}
	s.flushPoison()
	s.poisoned = &job{stream: s, term: []jsclient.AckRef{jsclient.AckRef(msg.Reply())}, marker: &lossmarker.Marker{
		Stream: s.cfg.Stream, Consumer: s.cfg.Consumer, Subject: subject,
		FirstSeq: seq, LastSeq: seq, Count: 1,
		Reason: lossmarker.Poison,
		Error:  why.Error(),
	}}
}

// poison drops the record the runner holds of msg, and has the stream's
// writer record msg as poison.
func (r *runner) poison(s *streamWriter, msg jetstream.Msg, why error) {
	r.intake.rec = formats.Record{}
	s.poison(msg, why)
}

// flushPoison queues the writer's poison marker that waits for more
// messages, if there is one.
func (s *streamWriter) flushPoison() {
	if s.poisoned != nil {
		s.hub.enqueue(s.poisoned)
		s.poisoned = nil
	}
}

// flushPoison queues the poison markers waiting for more messages.
func (r *runner) flushPoison() {
	for _, s := range r.streams {
		s.flushPoison()
	}
}

// ackCommitted acks a redelivered message that is already stored (read
// ack-less, it only notes it). Its intent is forgotten once the recorded
// floor passes it.
func (s *streamWriter) ackCommitted(seq uint64, msg jetstream.Msg) {
	if s.mode.AckLess {
		s.book.Acked(seq)
		return
	}
	if err := msg.Ack(); err != nil {
		s.log.Warn("ack of a stored message failed; it will come back", "stream", s.cfg.Stream, "sequence", seq, "error", err)
		return
	}
	s.m.acked.Inc()
	s.book.Acked(seq)
}
