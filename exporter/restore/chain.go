package restore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// Into a stream that allows batch publishing (allow_batched), a restore
// publishes a chain: fast batches, each message of which expects the
// stream's last sequence to be the one its predecessor landed at
// (Nats-Expected-Last-Sequence). The server stores a fast batch's
// messages as they come, without staging them; a batch ends at its first
// message the server refuses, and drops what follows it. So a message
// lands only right after its predecessor: what landed of a chain is a
// prefix of it, and no two copies of one message can both land, whatever
// was in flight when a restore was killed, or when a batch failed. On a
// failure the chain is taken up again after the newest restored message
// the target holds.
//
// The chain keeps the messages the server has not acknowledged yet: what
// a failure may make it publish again.

// Flow control of a chain's fast batches: the server acknowledges every
// chainFlow messages, and at most chainOutstanding acknowledgements are
// awaited. Measured against 100 and 2 (the library's defaults) and 1,000
// and 16, on 300,000 messages of 256 B: 500 and 8 publish 1.3 times as
// fast as the defaults, and as fast as 1,000 and 16.
const (
	chainFlow        = 500
	chainOutstanding = 8
	chainAckTimeout  = 10 * time.Second
)

// chain publishes messages one after the other into a target stream.
type chain struct {
	t   *target
	fp  jetstreamext.FastPublisher
	pos uint64 // the target's sequence the next message expects to be last
	// window holds the messages sent in the current fast batch and not
	// acknowledged: window[i] is the batch's message base+i+1.
	window []chained
	base   uint64
	// failure is the first error the server reported beside the
	// messages' answers (a refused message, a gap): the batch ended.
	mu      sync.Mutex
	failure error
	// landed is called with the messages known to have landed, in order;
	// last is the source sequence of the newest of them (or of the newest
	// restored before the chain started).
	landed func([]chained)
	last   uint64
	tries  int    // failures in a row without a message landing
	alone  uint64 // messages published alone (publishLone)
	log    *slog.Logger
}

// chained is a message of a chain, the source sequence it restores, and
// whether it keeps that sequence.
type chained struct {
	msg  *nats.Msg
	src  uint64
	kept bool
}

// newChain starts a chain after the target's last sequence; after is the
// newest source sequence restored before it.
func newChain(t *target, after uint64, landed func([]chained), log *slog.Logger) *chain {
	return &chain{t: t, pos: t.last, last: after, landed: landed, log: log}
}

// add publishes m, which restores source sequence src (under its own
// sequence when kept), after the chain's messages so far.
func (c *chain) add(ctx context.Context, m *nats.Msg, src uint64, kept bool) error {
	c.window = append(c.window, chained{m, src, kept})
	if c.fp == nil {
		return c.restart(ctx, nil)
	}
	if err := c.send(m); err != nil {
		return c.restart(ctx, err)
	}
	return nil
}

// send sends m as the current batch's next message.
func (c *chain) send(m *nats.Msg) error {
	if err := c.failed(); err != nil {
		return err
	}
	m.Header[jetstream.ExpectedLastSeqHeader] = []string{strconv.FormatUint(c.pos, 10)}
	ack, err := c.fp.AddMsg(m)
	if err != nil {
		return err
	}
	c.pos++
	c.acked(ack.AckSequence)
	return nil
}

// acked drops the window's messages up to the batch's message a, which
// the server acknowledged: they and all before them landed.
func (c *chain) acked(a uint64) {
	if a <= c.base {
		return
	}
	c.land(min(int(a-c.base), len(c.window)))
	c.base = a
}

// land takes the window's first n messages out: they landed.
func (c *chain) land(n int) {
	if n == 0 {
		return
	}
	c.landed(c.window[:n])
	c.last, c.tries = c.window[n-1].src, 0
	clear(c.window[:n])
	c.window = append(c.window[:0], c.window[n:]...)
}

func (c *chain) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failure
}

// open starts a fast batch after the target's sequence c.pos.
func (c *chain) open() error {
	c.mu.Lock()
	c.failure = nil
	c.mu.Unlock()
	fp, err := jetstreamext.NewFastPublisher(c.t.js,
		jetstreamext.FastPublishFlowControl{Flow: chainFlow, MaxOutstandingAcks: chainOutstanding, AckTimeout: chainAckTimeout},
		jetstreamext.WithFastPublisherErrorHandler(func(err error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.failure == nil {
				c.failure = err
			}
		}))
	if err != nil {
		return fmt.Errorf("target stream %s: %w", c.t.name, err)
	}
	c.fp, c.base = fp, 0
	return nil
}

// restart takes the chain up again after the newest restored message the
// target holds, and sends the window's messages that did not land in a
// new batch. cause is the failure that ended the batch before, nil for
// the chain's first batch.
func (c *chain) restart(ctx context.Context, cause error) error {
	for {
		if cause != nil {
			if err := c.settleWindow(ctx, cause); err != nil {
				return err
			}
			if movedOn(cause) && c.tries >= loneAfter && len(c.window) > 0 && !c.window[0].kept {
				if cause = c.publishLone(ctx); cause != nil {
					continue
				}
			}
		}
		if err := c.open(); err != nil {
			return err
		}
		cause = nil
		for _, w := range c.window {
			if cause = c.send(w.msg); cause != nil {
				break
			}
		}
		if cause == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// settleWindow finds out, after a batch failed with cause, which of the
// window's messages landed, from the newest restored message the target
// holds, and leaves in the window those that did not. c.pos is then the
// target's last sequence. Failures in a row without a message landing
// are bounded, and waited between unless someone else moved the
// stream's last sequence: then the chain is taken up again at once.
func (c *chain) settleWindow(ctx context.Context, cause error) error {
	c.tries++
	if c.tries > batchAttempts {
		return fmt.Errorf("target stream %s: the chain of messages from source sequence %d failed %d times in a row: %w", c.t.name, c.window[0].src, c.tries-1, cause)
	}
	if c.tries > 1 && !movedOn(cause) {
		select {
		case <-time.After(time.Duration(c.tries) * 200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	found, err := c.t.restored(ctx, 0)
	if err != nil {
		return errors.Join(cause, err)
	}
	n := 0
	for n < len(c.window) && c.window[n].src <= found {
		n++
	}
	switch {
	case found < c.last:
		return fmt.Errorf("target stream %s: its newest restored message is of source sequence %d, before %d, which landed: were messages deleted from it? (%w)", c.t.name, found, c.last, cause)
	case n == len(c.window) && n > 0 && found > c.window[n-1].src:
		return fmt.Errorf("target stream %s holds source sequence %d, past the chain's last %d: is another restore of %s running? (%w)", c.t.name, found, c.window[n-1].src, c.t.source, cause)
	case n < len(c.window) && c.window[n].kept && c.t.last != c.window[n].src-1:
		return fmt.Errorf("target stream %s: someone else published to it (its last sequence is %d, not %d) while it was restored under the original sequences (%w)", c.t.name, c.t.last, c.window[n].src-1, cause)
	}
	c.log.Warn("a fast batch ended; the chain is taken up again after the newest restored message", "target", c.t.name,
		"source_seq", found, "target_seq", c.t.last, "try", c.tries, "error", cause)
	c.land(n)
	c.pos = c.t.last
	return nil
}

// loneAfter is how many take-ups in a row another publisher may win
// before the chain's next message goes alone.
const loneAfter = 2

// publishLone publishes the window's first message alone, with a message
// id in place of an expected last sequence, and moves the chain past it: a
// publisher that comes between two messages faster than a chain's first
// message reaches the server would otherwise end every take-up before a
// message lands. The message lands once as a chain's does: after a
// failure the chain looks for the newest restored message before it
// publishes again, and the stream's duplicate window drops a second copy
// still in flight.
func (c *chain) publishLone(ctx context.Context) error {
	m := c.window[0].msg
	delete(m.Header, jetstream.ExpectedLastSeqHeader)
	if err := c.t.publishIDs(ctx, []*nats.Msg{m}); err != nil {
		return err
	}
	c.alone++
	c.land(1)
	c.pos = c.t.last
	return nil
}

// movedOn reports whether err is the server's refusal of a message that
// expected another last sequence: someone else published meanwhile.
func movedOn(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// close ends the chain's batch once every message in it landed.
func (c *chain) close(ctx context.Context) error {
	for c.fp != nil {
		err := c.failed()
		if err == nil && len(c.window) == 0 && c.fp.IsClosed() {
			return nil
		}
		if err == nil {
			var ack *jetstreamext.BatchAck
			if ack, err = c.fp.Close(ctx); err == nil {
				if ack.Sequence != c.pos {
					err = fmt.Errorf("target stream %s: the chain ended at sequence %d, not %d", c.t.name, ack.Sequence, c.pos)
				} else {
					c.land(len(c.window))
					c.t.last = c.pos
					return nil
				}
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := c.settleWindow(ctx, err); err != nil {
			return err
		}
		if len(c.window) == 0 {
			return nil
		}
		if err := c.restart(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}
