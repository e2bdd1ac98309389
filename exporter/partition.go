package exporter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/lease"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// A partitioned [[streams]] entry (partitions = P) is P stream writers, one per
// partition, each with its own pinned consumer (<consumer>-<k>) whose
// filter selects the partition's token. Instances share the partitions
// through leases in the state bucket; see leaser.go. An instance pulls a
// partition only while it holds its lease, and gives a partition up by
// draining it: its pulls stop, what it holds is uploaded and acked, the
// consumer is unpinned and only then is the lease released.

// partGroup is one partitioned [[streams]] entry.
type partGroup struct {
	cfg    config.Stream   // the entry as configured: the consumer's base name
	prefix string          // of its lease keys
	parts  []*streamWriter // by partition number
	mHeld  prometheus.Gauge
	// partitions held that can not pull
	mStalled prometheus.Gauge
}

// partition is what a streamWriter of a partitioned entry keeps about its
// partition and its lease. Only the runner goroutine touches it.
type partition struct {
	k       int
	key     string    // the lease key
	rev     uint64    // revision of this instance's lease; 0 when not held
	renewed time.Time // when this instance last wrote the lease

	// A handover: pulls stop, what the partition holds is uploaded and
	// acked, then the lease is released.
	handing bool
	stopped bool      // the pulls have ended
	lost    bool      // the lease is not ours any more: neither unpin nor release
	since   time.Time // when the handover started
}

// setUpPartitions makes sure the stream of a partitioned entry carries the
// partition transform, and returns its partitions' writers, set up as
// pinned consumers that pull nothing until their lease is held.
func (e *session) setUpPartitions(run, attempt context.Context, sc config.Stream) (*partGroup, error) {
	ctx := attempt
	stream, err := e.js.Stream(ctx, sc.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, &jsclient.ConfigError{Stream: sc.Stream, Msg: "stream not found: create it, or fix " + jsclient.StreamKey(e.cfg, sc) + ".stream"}
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", sc.Stream, err)
	}
	si := stream.CachedInfo()
	if err := jsclient.EnsurePartitionTransform(ctx, e.js, e.cfg, sc, si.Config); err != nil {
		return nil, err
	}
	if _, err := stream.Consumer(ctx, sc.Consumer); err == nil {
		return nil, &jsclient.ConfigError{Stream: sc.Stream, Consumer: sc.Consumer, Msg: fmt.Sprintf(
			"exists without partitions: the partition consumers (%s to %s) would export again what it exported; "+
				"give %s.consumer another name for the partitioned export, or delete this consumer if nothing it read is wanted",
			config.PartitionConsumer(sc.Consumer, 0), config.PartitionConsumer(sc.Consumer, sc.Partitions-1), jsclient.StreamKey(e.cfg, sc))}
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("stream %s: consumer %s: %w", sc.Stream, sc.Consumer, err)
	}
	g := &partGroup{cfg: sc, prefix: statekey.Leases(e.cfg.Name, sc.Stream, sc.Consumer),
		mHeld:    e.m.PartitionsHeld.WithLabelValues(e.cfg.Name, sc.Stream),
		mStalled: e.m.PartitionsStalled.WithLabelValues(e.cfg.Name, sc.Stream)}
	g.mHeld.Set(0)
	g.mStalled.Set(0)
	for k := range sc.Partitions {
		pc := sc
		pc.Consumer = config.PartitionConsumer(sc.Consumer, k)
		pc.Subjects = config.PartitionFilters(k, sc.Subjects, si.Config.Subjects)
		s := newStreamWriter(e, pc)
		s.base, s.part = sc.Consumer, &partition{k: k, key: statekey.Lease(e.cfg.Name, sc.Stream, sc.Consumer, k)}
		err := retry(ctx, e.log, "jetstream", func(attempt context.Context) error { return s.setupStream(run, attempt) })
		if err != nil {
			return nil, err
		}
		g.parts = append(g.parts, s)
	}
	e.log.Info("partitions ready", "stream", sc.Stream, "consumer", sc.Consumer, "partitions", sc.Partitions,
		"lease_ttl", sc.LeaseTTL, "ack_wait", sc.AckWait, "max_ack_pending", sc.MaxAckPending)
	return g, nil
}

// Idle says why a connector that is ready does no work: it has partitioned
// streams and holds none of their partitions. It returns "" otherwise. Safe
// for concurrent use.
func (e *Exporter) Idle() string {
	parts := e.partitions.Load()
	if parts == 0 || e.held.Load() > 0 {
		return ""
	}
	return fmt.Sprintf("connector %s: idle: holds none of its %d partitions (other instances hold them)", e.cfg.Name, parts)
}

// holdings refreshes what Idle, Ready and the partitions_held and
// partitions_stalled gauges say.
func (r *runner) holdings() {
	total := 0
	var stalled []string
	for _, s := range r.streams {
		if s.part == nil && s.cur.stalled != "" {
			stalled = append(stalled, fmt.Sprintf("stream %s, consumer %s can not pull: %s", s.cfg.Stream, s.cfg.Consumer, s.cur.stalled))
		}
	}
	for _, g := range r.groups {
		held, stuck := 0, 0
		for _, s := range g.parts {
			if s.part.rev != 0 && !s.part.handing {
				held++
				if s.cur.stalled != "" {
					stuck++
					stalled = append(stalled, fmt.Sprintf("stream %s, consumer %s: partition %d can not pull: %s", s.cfg.Stream, s.cfg.Consumer, s.part.k, s.cur.stalled))
				}
			}
		}
		g.mHeld.Set(float64(held))
		g.mStalled.Set(float64(stuck))
		total += held
	}
	r.held.Store(int64(total))
	if len(stalled) == 0 {
		r.stalled.Store(nil)
		return
	}
	why := strings.Join(stalled, "; ")
	r.stalled.Store(&why)
}

// handOver stops pulling partition s and drains it; releaseChore
// releases its lease once what it held is uploaded and acked. lost: the
// lease is another's already, and is neither unpinned nor released.
func (s *streamWriter) handOver(ctx context.Context, lost bool, why string) {
	p := s.part
	if p.handing {
		p.lost = p.lost || lost
		return
	}
	p.handing, p.lost, p.since = true, lost, time.Now()
	s.hub.holdings()
	s.log.Info("handing a partition over", "stream", s.cfg.Stream, "consumer", s.cfg.Consumer, "partition", p.k, "why", why)
	cc := s.cur.cc
	if cc == nil {
		p.stopped = true
		return
	}
	// Drain: the client delivers what it buffered, then the pulls end.
	cc.Drain()
	s.hub.beside(func() func() {
		t := time.NewTimer(pullEndTimeout)
		defer t.Stop()
		select {
		case <-cc.Closed():
		case <-t.C:
			cc.Stop()
		}
		return func() {
			if s.cur.cc == cc {
				s.cur.cc = nil
			}
			p.stopped = true
			// The deliveries the pulls handed over before they ended
			// are queued already: take them in before sealing.
			s.hub.takeArrived(ctx)
		}
	})
}

// pullEndTimeout bounds how long a drained pull may take to end.
const pullEndTimeout = 10 * time.Second

// sealHandovers seals what partitions being handed over still have open
// once their pulls ended; releaseChore then releases each one's lease.
func (r *runner) sealHandovers() {
	for i, s := range r.streams {
		p := s.part
		if p == nil || !p.handing || !p.stopped || s.chores.release.running {
			continue
		}
		// The stream's groups start with its index; see runner.add.
		prefix := strconv.Itoa(i) + "\x00"
		match := func(g string) bool { return strings.HasPrefix(g, prefix) }
		if r.set.SealWhere(buffer.ReasonHandover, match)+r.rej.SealWhere(buffer.ReasonHandover, match) > 0 {
			r.takeSealed()
		}
		s.flushPoison()
	}
}

// releaseChore writes the export record of partition s and releases its lease, beside the loop, once it is handed over
// and holds nothing more. Nil for a stream that is not a partition.
func (s *streamWriter) releaseChore() *chore {
	if s.part == nil {
		return nil
	}
	return &chore{
		name: "release",
		due: func(_ time.Time, final bool) bool {
			p, sc := s.part, s.chores
			if final || !p.handing || !p.stopped {
				return false
			}
			held, _ := s.book.Counts()
			return held == 0 && s.jobs == 0 && !s.fence.takingOver && len(s.fence.parked) == 0 && !sc.walk.running && !sc.save.running
		},
		start: func(now time.Time) choreWork {
			// What the work beside the loop needs, taken on the loop: the
			// record as it is now, and the lease as it is now.
			l, rev := s.book.Ledger(), uint64(0)
			var rec state.Record
			save := l != nil && s.sn.intents != nil && l.Rev() != s.record.savedRev
			if save {
				rec, rev = state.LedgerRecord(l, s.created, now), l.Rev()
			}
			lease := s.leaseRef()
			return func(ctx context.Context) (func(), error) {
				saveRes := &saveResult{stream: s, l: l, rev: rev}
				if save {
					sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
					saveRes.floor, saveRes.untrusted, saveRes.err = state.SaveRecord(sctx, s.sn.intents, s.record.key, rec, s.lastSeq())
					cancel()
				}
				err := s.sn.release(ctx, lease)
				return func() {
					if save {
						s.saved(saveRes)
					}
					s.released(err)
				}, err
			}
		},
	}
}

// leaseRef is what releasing a partition's lease needs, taken on the loop.
type leaseRef struct {
	stream   jetstream.Stream
	name     string // the stream's
	consumer string
	key      string
	rev      uint64 // 0: not this instance's to release
}

// leaseRef returns partition s's lease as it stands: rev 0 when the lease
// was lost, and another instance holds both it and the pin.
func (s *streamWriter) leaseRef() leaseRef {
	p := s.part
	ref := leaseRef{stream: s.stream, name: s.cfg.Stream, consumer: s.cfg.Consumer, key: p.key}
	if !p.lost {
		ref.rev = p.rev
	}
	return ref
}

// release unpins a partition's consumer and releases its lease; a lease
// that was lost is left alone.
func (e *session) release(ctx context.Context, l leaseRef) error {
	if l.rev == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// Unpinned first, so that the next holder is pinned at its first pull
	// rather than after priority_timeout.
	if err := l.stream.UnpinConsumer(rctx, l.consumer, jsclient.PriorityGroup); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		e.log.Warn("unpin failed; the next holder is pinned after priority_timeout", "stream", l.name, "consumer", l.consumer, "error", err)
	}
	return e.leases.Release(rctx, l.key, l.rev)
}

// released applies a finished handover: the partition's state is dropped,
// to be recovered afresh if this instance holds it again.
func (s *streamWriter) released(err error) {
	p := s.part
	kind := "handed_over"
	switch {
	case p.lost:
		kind = "lost"
	case err != nil:
		// Not released: it expires within lease_ttl.
		s.log.Warn("lease release failed; it expires by itself", "stream", s.cfg.Stream, "partition", p.k, "error", err)
	}
	if s.hub.stopping() {
		kind = "shutdown"
	}
	took := time.Since(p.since)
	s.sn.m.Handovers.WithLabelValues(s.sn.cfg.Name, s.cfg.Stream, kind).Inc()
	s.sn.m.HandoverSeconds.WithLabelValues(s.sn.cfg.Name, s.cfg.Stream).Observe(took.Seconds())
	s.log.Info("partition released", "stream", s.cfg.Stream, "consumer", s.cfg.Consumer, "partition", p.k, "kind", kind, "took", took.Round(time.Millisecond))
	*p = partition{k: p.k, key: p.key}
	s.fence.pin, s.cur.remade = "", time.Time{}
	s.fence.pins.start("")
	s.resetBook()
	s.cur.drained = false
	s.hub.holdings()
}

// partitionsHeld lists the partitions whose lease this instance holds, for
// a lease round.
func (r *runner) partitionsHeld() []lease.Held {
	var out []lease.Held
	for _, g := range r.groups {
		for _, s := range g.parts {
			if p := s.part; p.rev != 0 && !p.lost {
				out = append(out, lease.Held{Key: p.key, Rev: p.rev})
			}
		}
	}
	return out
}
