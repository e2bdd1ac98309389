package exporter

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
)

// pull starts pulling s's consumer.
//
// A callback, not an iterator: the pulls queue what the server sends while
// the runner applies backpressure, where a fixed channel would drop
// messages (slow consumer) that then come back only after AckWait.
//
// jsclient.Pull, not jetstream's Consume, whatever the consumer: Consume
// sends with its next request the first Nats-Pin-Id of a message, which a
// publisher may have set, and a consumer refuses a forged id (see
// jsclient.Pull).
func (r *runner) pull(s *streamWriter) error {
	i := slices.Index(r.streams, s)
	s.cur.pulls++
	pull := s.cur.pulls
	handle := func(msg jetstream.Msg) {
		select {
		case r.wires.in <- delivery{stream: i, msg: msg, pull: pull}:
		case <-r.wires.quit:
		}
	}
	o := jsclient.PullOptions{
		Batch:    min(max(s.cfg.MaxAckPending, 1), 1000),
		MaxBytes: r.pullBytes(),
		Expires:  pullExpires,
	}
	if s.cfg.Failover == config.FailoverPinned {
		// A request well within the pinned TTL: the server unpins a
		// client that sent none for that long, even an idle one, and the
		// next pull then takes the pin over again with a recovery.
		o.Group, o.Expires = jsclient.PriorityGroup, max(s.cfg.PriorityTimeout/3, time.Second)
	}
	cc, err := jsclient.Pull(r.js, s.cfg.Stream, s.cfg.Consumer, o, handle, func(err error) { r.pullError(s, err) })
	if err != nil {
		err = fmt.Errorf("stream %s, consumer %s: consume: %w", s.cfg.Stream, s.cfg.Consumer, err)
		r.fail(err)
		return err
	}
	s.cur.cc = cc
	return nil
}

// pullExpires is how long a pull request of a consumer without a priority
// group waits on the server, as jetstream's Consume has it.
const pullExpires = 30 * time.Second

// pullError handles an error the consumer reports while pulling: a deleted
// stream stops the exporter; anything else (a deleted consumer, missed
// heartbeats, a reconnect) is logged and handed to the loop, which looks
// the consumer up and re-creates it from the export record when it is
// missing (consumerChore).
func (r *runner) pullError(s *streamWriter, err error) {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		select {
		case r.wires.fatal <- fmt.Errorf("stream %s, consumer %s: %w: %w", s.cfg.Stream, s.cfg.Consumer, ErrConsumerDeleted, err):
		default:
		}
		return
	}
	if errors.Is(err, jetstream.ErrPinIDMismatch) {
		// Another instance holds the pin: the consumer is fine, and this
		// instance is a standby until the pin moves to it.
		r.log.Debug("pinned to another instance", "stream", s.cfg.Stream, "consumer", s.cfg.Consumer)
		return
	}
	r.log.Warn("pull problem; pulling goes on", "stream", s.cfg.Stream, "consumer", s.cfg.Consumer, "error", err)
	why := err.Error()
	s.cur.pullTrouble.Store(&why)
}
