package exporter

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/lossmarker"
)

// streamState is what the runner keeps per configured stream. Set up
// before the runner starts; afterwards only the runner goroutine changes it,
// and uploaders read only cfg, created and intentPrefix.
type streamState struct {
	cfg          config.Stream
	cons         jetstream.Consumer
	cc           jetstream.ConsumeContext
	created      time.Time // the stream's creation time: with its name, its identity
	intentPrefix string

	book      seqBook // what is known of each sequence delivered
	pin       string  // Nats-Pin-Id of the last message on a pinned consumer
	recovered int     // intents recovered at start

	mReceived, mRedelivered, mAcked prometheus.Counter
	newest                          time.Time // timestamp of the newest exported message

	// Gap detection for consumers that see every message of the stream:
	// the stream sequence the next first delivery should have (0: unknown).
	poisoned     *job                 // a poison marker that consecutive poison messages may still join
	startMarkers []*lossmarker.Marker // found while setting up; written when the runner starts

	drained bool // the last delivery said the consumer had nothing more to deliver

	gapCheck bool
	next     uint64
	suspects []Range          // skipped ranges to check against the stream
	stream   jetstream.Stream // for those checks
}

// delivery is a message handed from a puller to the runner.
type delivery struct {
	stream int // index into runner.streams
	msg    jetstream.Msg
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
	s.book.reset()
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
	// The server starts a consumer's delivered sequence just before the
	// first message it can deliver (0 on an empty stream), so everything
	// after it is in scope, even when nothing was delivered yet: messages
	// published after the consumer existed and removed before this start
	// are a gap too.
	s.next = info.Delivered.Stream + 1
	if !s.gapCheck && si.State.FirstSeq > info.Delivered.Stream+1 {
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
