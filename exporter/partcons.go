package exporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// partitionCheckEvery is how often the consumer of a held partition that
// can not pull is looked up.
const partitionCheckEvery = 2 * time.Second

// tendPartitions looks into the problems the pulls of held partitions
// reported: such a partition is stalled until its consumer is found, or
// re-created when it is missing, beside the loop.
func (r *runner) tendPartitions(ctx context.Context, now time.Time) {
	changed := false
	for _, s := range r.streams {
		p := s.part
		if p == nil {
			continue
		}
		why := s.pullTrouble.Swap(nil)
		if p.rev == 0 || p.handing || p.lost {
			continue
		}
		if why != nil && p.stalled == "" {
			// Looked up after a moment: a pull problem often passes
			// (a reconnect, a leader election).
			p.stalled, p.checked, changed = *why, now, true
		}
		if p.stalled == "" || p.checking || now.Sub(p.checked) < partitionCheckEvery {
			continue
		}
		p.checking = true
		r.beside(func() func() {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			cons, made, err := r.e.partitionConsumer(cctx, s)
			cancel()
			return func() { r.partitionChecked(s, cons, made, err) }
		})
	}
	if changed {
		r.holdings()
	}
}

// partitionChecked applies the look-up of a stalled partition's consumer:
// a re-created consumer is pulled afresh; one that exists ends the stall
// (the problem was passing), and the pulls report again if it was not.
func (r *runner) partitionChecked(s *streamState, cons jetstream.Consumer, made bool, err error) {
	p := s.part
	p.checking, p.checked = false, time.Now()
	if p.rev == 0 || p.handing || p.lost {
		p.stalled = ""
		r.holdings()
		return
	}
	switch {
	case err != nil:
		p.stalled = err.Error()
		r.log.Warn("a held partition can not pull", "stream", s.cfg.Stream, "consumer", s.cfg.Consumer, "partition", p.k, "error", err)
	case made:
		r.log.Warn("the partition's consumer was missing: re-created from the export record", "stream", s.cfg.Stream,
			"consumer", s.cfg.Consumer, "partition", p.k, "deliver_from", cons.CachedInfo().Config.OptStartSeq)
		if s.cc != nil {
			s.cc.Stop()
			s.cc = nil
		}
		s.cons = cons
		if r.pull(s) == nil {
			p.stalled = ""
		}
	default:
		p.stalled = ""
	}
	r.holdings()
}

// partitionConsumer returns the consumer of partition s, re-created (made)
// when it is missing. It starts after the export record's floor: what the
// record names above it is acked without being written again when it
// comes back. Without a record of this stream it delivers the whole
// partition, for the same reason.
func (e *Exporter) partitionConsumer(ctx context.Context, s *streamState) (cons jetstream.Consumer, made bool, err error) {
	cons, err = s.stream.Consumer(ctx, s.cfg.Consumer)
	if err == nil {
		return cons, false, nil
	}
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, false, fmt.Errorf("consumer info: %w", err)
	}
	cfg := consumerConfig(e.cfg.Name, s.cfg)
	floor, err := e.recordFloor(ctx, s)
	if err != nil {
		return nil, false, fmt.Errorf("the consumer is missing, and its export record can not be read: %w", err)
	}
	if floor > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, floor+1
	}
	cons, err = s.stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return nil, false, fmt.Errorf("the consumer is missing and could not be re-created: %w", err)
	}
	return cons, true, nil
}

// recordFloor returns the floor of s's export record: every sequence up to
// it is exported. 0 when there is no record of this stream, or when the
// record claims sequences the stream never had and is not believed.
func (e *Exporter) recordFloor(ctx context.Context, s *streamState) (uint64, error) {
	if e.intents == nil {
		return 0, nil
	}
	rec, _, err := loadRecord(ctx, e.intents, s.recordKey)
	var bad *unreadableRecordError
	switch {
	case errors.As(err, &bad):
		return 0, nil
	case err != nil:
		return 0, err
	case rec == nil || !rec.StreamCreated.Equal(s.created):
		return 0, nil
	}
	si, err := s.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream info: %w", err)
	}
	if rec.claims() > si.State.LastSeq {
		return 0, nil
	}
	return rec.Floor, nil
}
