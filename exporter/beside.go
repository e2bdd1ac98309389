package exporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/buffer"
)

// beside runs work in a goroutine beside the loop, so that no network call
// holds up deliveries and acks; the function work returns is applied on
// the loop, which owns the state. Work that reports after the loop ended is
// dropped.
func (r *runner) beside(work func() func()) {
	r.chores.besideN++
	r.chores.bg.Go(func() {
		apply := work()
		select {
		case r.wires.back <- apply:
		case <-r.wires.stopping:
		}
	})
}

// consumerGauges refreshes the consumer gauges from the consumers' info,
// beside the loop.
func (r *runner) consumerGauges(ctx context.Context) {
	if r.chores.gauging {
		return
	}
	r.chores.gauging = true
	conses := make([]jetstream.Consumer, len(r.streams))
	for i, s := range r.streams {
		conses[i] = s.cons
	}
	r.beside(func() func() {
		// Summed by stream: the partitions of one stream share its labels.
		type counts struct {
			pending, ackPending uint64
			ok                  bool
		}
		by := map[string]*counts{}
		for i, s := range r.streams {
			c := by[s.cfg.Stream]
			if c == nil {
				c = &counts{ok: true}
				by[s.cfg.Stream] = c
			}
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			info, err := conses[i].Info(ictx)
			cancel()
			if err != nil {
				c.ok = false
				continue
			}
			c.pending += info.NumPending
			c.ackPending += uint64(info.NumAckPending)
		}
		for stream, c := range by {
			if c.ok {
				r.e.m.Pending.WithLabelValues(r.e.cfg.Name, stream).Set(float64(c.pending))
				r.e.m.AckPending.WithLabelValues(r.e.cfg.Name, stream).Set(float64(c.ackPending))
			}
		}
		return func() { r.chores.gauging = false }
	})
}

// checkIdle asks, beside the loop, whether every consumer has nothing
// pending; the loop then decides whether the work is done (Options.UntilIdle)
// and sets idleDone.
func (r *runner) checkIdle(ctx context.Context) {
	if r.chores.checking {
		return
	}
	r.chores.checking = true
	conses := make([]jetstream.Consumer, len(r.streams))
	for i, s := range r.streams {
		conses[i] = s.cons
	}
	r.beside(func() func() {
		infos := make([]*jetstream.ConsumerInfo, len(r.streams))
		var fatal error
		for i, s := range r.streams {
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			info, err := conses[i].Info(ictx)
			cancel()
			if err != nil {
				switch {
				case errors.Is(err, jetstream.ErrStreamNotFound):
					fatal = fmt.Errorf("stream %s, consumer %s: %w: %w", s.cfg.Stream, s.cfg.Consumer, ErrConsumerDeleted, err)
				case errors.Is(err, jetstream.ErrConsumerNotFound):
					// Re-created from the export record by the loop.
					why := err.Error()
					s.pullTrouble.Store(&why)
				}
				infos = nil
				break
			}
			infos[i] = info
		}
		return func() {
			r.chores.checking = false
			if fatal != nil {
				r.fail(fatal)
				return
			}
			if infos != nil && r.idle(infos) {
				r.log.Info("idle: every consumer is caught up")
				r.chores.idleDone = true
			}
		}
	})
}

// idle reports whether, by infos, every consumer has nothing pending and
// nothing is buffered or in flight. When the consumers are caught up but
// buffers are open, it seals them so the next check can succeed.
func (r *runner) idle(infos []*jetstream.ConsumerInfo) bool {
	acked := true
	for _, info := range infos {
		if info.NumPending > 0 {
			return false
		}
		if info.NumAckPending > 0 {
			acked = false
		}
	}
	for _, s := range r.streams {
		if l := s.book.Ledger(); l != nil && l.Unsettled() {
			// Sequences not known to be exported: a walk tells whether
			// they come back or get a loss marker.
			return false
		}
	}
	if r.set.Open()+r.rej.Open() > 0 {
		r.set.SealAll(buffer.ReasonShutdown)
		r.rej.SealAll(buffer.ReasonShutdown)
		r.takeSealed()
		return false
	}
	if lt := r.e.table; lt != nil && acked && r.up.inflight == 0 && !lt.idle() {
		// Everything is stored: commit it now rather than at the next
		// interval.
		r.commitTable(r.ctx, time.Now(), true)
		return false
	}
	return acked && r.up.inflight == 0
}
