package exporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/config"
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

// gaugeChore refreshes the consumer gauges from the consumers' info every
// 5 seconds.
func (r *runner) gaugeChore() *chore {
	return &chore{
		name: "gauges",
		due:  func(now time.Time, final bool) bool { return !final && now.Sub(r.chores.lastGauge) >= 5*time.Second },
		start: func(now time.Time) choreWork {
			r.chores.lastGauge = now
			conses := make([]jetstream.Consumer, len(r.streams))
			for i, s := range r.streams {
				conses[i] = s.cur.cons
			}
			return func(ctx context.Context) (func(), error) {
				r.refreshGauges(ctx, conses)
				return nil, nil
			}
		},
	}
}

// refreshGauges sets the consumer gauges from the info of conses, the
// consumers of r.streams, summed by stream: the partitions of one stream
// share its labels.
func (r *runner) refreshGauges(ctx context.Context, conses []jetstream.Consumer) {
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
			r.m.Pending.WithLabelValues(r.cfg.Name, stream).Set(float64(c.pending))
			r.m.AckPending.WithLabelValues(r.cfg.Name, stream).Set(float64(c.ackPending))
		}
	}
}

// idleChore asks whether every consumer has nothing pending, when nothing
// came for half a second, or for fastIdle after the last deliveries said
// nothing more was pending; the loop then decides whether the work is
// done (Options.UntilIdle) and sets idleDone. Nil without UntilIdle.
func (r *runner) idleChore() *chore {
	if !r.opts.UntilIdle {
		return nil
	}
	return &chore{
		name: "idle",
		due: func(now time.Time, final bool) bool {
			quiet := now.Sub(r.chores.lastMsg)
			return !final && len(r.up.queue) == 0 && (quiet >= 500*time.Millisecond ||
				r.drained() && quiet >= fastIdle && (r.up.inflight == 0 || r.set.Open()+r.rej.Open() > 0))
		},
		start: func(time.Time) choreWork {
			conses := make([]jetstream.Consumer, len(r.streams))
			for i, s := range r.streams {
				conses[i] = s.cur.cons
			}
			return func(ctx context.Context) (func(), error) {
				infos, fatal := r.consumerInfos(ctx, conses)
				return func() {
					if fatal != nil {
						r.fail(fatal)
						return
					}
					if infos != nil && r.idle(ctx, infos) {
						r.log.Info("idle: every consumer is caught up")
						r.chores.idleDone = true
					}
				}, fatal
			}
		},
	}
}

// consumerInfos returns the info of conses, the consumers of r.streams;
// nil when one could not be had. A stream that is gone is fatal; a
// consumer that is gone is re-created from the export record by the loop.
func (r *runner) consumerInfos(ctx context.Context, conses []jetstream.Consumer) ([]*jetstream.ConsumerInfo, error) {
	infos := make([]*jetstream.ConsumerInfo, len(r.streams))
	for i, s := range r.streams {
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := conses[i].Info(ictx)
		cancel()
		if err != nil {
			switch {
			case errors.Is(err, jetstream.ErrStreamNotFound):
				return nil, fmt.Errorf("stream %s, consumer %s: %w: %w", s.cfg.Stream, s.cfg.Consumer, ErrConsumerDeleted, err)
			case errors.Is(err, jetstream.ErrConsumerNotFound):
				why := err.Error()
				s.cur.pullTrouble.Store(&why)
			}
			return nil, nil
		}
		infos[i] = info
	}
	return infos, nil
}

// idle reports whether, by infos, every consumer has nothing pending and
// nothing is buffered or in flight. When the consumers are caught up but
// buffers are open, it seals them so the next check can succeed.
func (r *runner) idle(ctx context.Context, infos []*jetstream.ConsumerInfo) bool {
	acked := true
	for _, info := range infos {
		if info.NumPending > 0 {
			return false
		}
		if info.NumAckPending > 0 {
			acked = false
		}
	}
	for i, s := range r.streams {
		l := s.book.Ledger()
		switch {
		case !s.pulling():
			// A partition another instance holds: its holder tells.
		case l == nil && s.mode.AckLess && s.cfg.Failover == config.FailoverPinned &&
			(s.fence.takingOver || len(s.fence.parked) > 0 || !s.cur.lookedUnpinned || s.cur.behind):
			// Not active (yet): a takeover is under way, or the consumer
			// may hold what nobody exported, which only moving it back
			// brings to the instance pinned next; it has no unacked
			// messages to say so.
			return false
		case l == nil:
		case l.Unsettled():
			// Sequences not known to be exported: a walk tells whether
			// they come back or get a loss marker.
			return false
		case len(s.unsure) > 0:
			// Messages waiting for an unresolved intent.
			return false
		case s.mode.AckLess && infos[i].Delivered.Stream > l.Frontier():
			// Delivered, and not in the loop yet: an ack-less consumer
			// has nothing unacked to say so.
			return false
		}
	}
	if r.set.Open()+r.rej.Open() > 0 {
		r.set.SealAll(buffer.ReasonShutdown)
		r.rej.SealAll(buffer.ReasonShutdown)
		r.takeSealed()
		return false
	}
	if acked && r.up.inflight == 0 && !r.sink.settled() {
		// Everything is stored: into the lake with it now rather than
		// at the next interval.
		r.startChores(ctx, time.Now())
		return false
	}
	return acked && r.up.inflight == 0
}
