package exporter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
)

// errFenced ends the store of a batch of a pinned consumer (failover =
// "pinned", and every partition) that this instance is no longer pinned
// to: its messages are another instance's now.
var errFenced = errors.New("this instance is no longer pinned to the consumer: the batch is left to the instance pinned now")

// checkPin fences the store of a batch of s sealed while this instance was
// pinned with pin: it asks the consumer's leader which client is pinned,
// and returns errFenced when it is not pin.
//
// Messages sent into a link that froze reach the instance when the link
// thaws, and their AckWait counts, for it, from then: meanwhile the server
// may have moved the pin and redelivered them to the instance pinned now,
// which stores them too. Asked after the batch's intent is recorded and
// within the upload attempt, the pin closes that window: an instance
// pinned after this check recovers the intent (pinned first, it lists the
// intents after) and waits for the attempt to end before it looks for the
// object; one pinned before makes the check fail. Left open: a process
// paused, past that wait, between the check and the send of its PUT (see
// docs/guarantees.md, step 6); a PUT presigned before the check and
// expiring within the wait would close it.
func (s *streamWriter) checkPin(ctx context.Context, pin string) error {
	if s.cfg.Failover != config.FailoverPinned || s.sn.js == nil {
		return nil
	}
	pinned, err := jsclient.Pinned(ctx, s.sn.js, s.cfg.Stream, s.cfg.Consumer)
	if err != nil {
		return fmt.Errorf("which instance is pinned: %w", err)
	}
	return s.fence.pins.judge(pin, pinned)
}

// errPinUnsettled fails an upload attempt, to be tried again, that finds
// the server pinned to a pin this instance has not confirmed yet on a
// consumer it re-created: the pin may follow on (the batch is this
// instance's still) or not (fenced), which the confirmation tells.
var errPinUnsettled = errors.New("the pin of a consumer this instance re-created is being confirmed")

// pinLine is the pins this instance held on a consumer one after the
// other with no other client pinned in between: a batch sealed under one
// of them is this instance's to store while the server pins another. A
// pin follows on in the line only where nobody else can have been pinned
// between: on a partition consumer this instance re-created while holding
// the partition's lease (nobody else pulls it), the first pin it is given.
// Any other new pin starts the line again. Safe for concurrent use: the
// runner writes it, the uploads' fences read it.
type pinLine struct {
	mu  sync.Mutex
	ids []string
	// awaiting: the consumer was re-created by this instance and its first
	// pin is not confirmed yet; the next start or extend settles it.
	awaiting bool
}

// pinState is which instance a pinned consumer's server pins, as this
// instance knows it, and the takeover when it is this one.
type pinState struct {
	pin    string  // Nats-Pin-Id of the last message
	notPin string  // a later pin the server did not confirm
	pins   pinLine // the pins this instance held in a row, up to pin: the fence reads it
	// A takeover: recovery runs beside the loop, and the stream's
	// deliveries wait meanwhile.
	takingOver bool
	// The sequence of the first message delivered with the pin being
	// confirmed: the consumer delivers from it on in order to this
	// instance, and what it delivered before went to the instance pinned
	// before.
	pinnedFrom uint64
	parked     []delivery
}

// maxPinLine bounds the pins a line keeps: a batch is sealed under one of
// the last few.
const maxPinLine = 8

// start begins the line again with pin ("": no pin).
func (l *pinLine) start(pin string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids, l.awaiting = l.ids[:0], false
	if pin != "" {
		l.ids = append(l.ids, pin)
	}
}

// extend adds pin, held by this instance right after the line's last.
func (l *pinLine) extend(pin string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ids) == maxPinLine {
		l.ids = slices.Delete(l.ids, 0, 1)
	}
	l.ids, l.awaiting = append(l.ids, pin), false
}

// await marks the line's consumer re-created by this instance: until its
// first pin is confirmed (extend) or not (start), a pin the line does not
// hold is neither this instance's nor another's.
func (l *pinLine) await() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.awaiting = true
}

// judge tells the store of a batch sealed under pin sealed what the
// server's pinned now means for it: nil when both are in the line,
// errPinUnsettled when now may still follow on, errFenced otherwise.
func (l *pinLine) judge(sealed, now string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case sealed == "":
	case sealed == now || slices.Contains(l.ids, sealed) && slices.Contains(l.ids, now):
		return nil
	case l.awaiting && slices.Contains(l.ids, sealed):
		return fmt.Errorf("%w (pinned when sealed %q, now %q)", errPinUnsettled, sealed, now)
	}
	return fmt.Errorf("%w (pinned when sealed %q, now %q)", errFenced, sealed, now)
}

// confirmPin asks the consumer's leader, beside the loop, whether this
// instance is pinned with pin, the pin id the server set on a message and
// not the one this instance held. The stream's deliveries are parked
// meanwhile. Confirmed, this instance takes the consumer over. Otherwise
// the pin moved on already: it is remembered as not this instance's (its
// messages come again to the instance pinned now), and the parked
// deliveries are taken in again. When the leader does not answer, the
// deliveries that carry pin are left to the server, which sends them again
// after AckWait, and the next one asks again.
func (s *streamWriter) confirmPin(ctx context.Context, pin string) {
	s.fence.takingOver = true
	js := s.sn.js
	s.hub.beside(func() func() {
		pinned, err := pin, error(nil)
		if js != nil {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			pinned, err = jsclient.Pinned(ctx, js, s.cfg.Stream, s.cfg.Consumer)
			cancel()
		}
		return func() {
			s.fence.takingOver = false
			if err == nil && pinned == pin {
				if s.followsOn() {
					// The consumer this instance re-created for a partition
					// it holds: nobody else was pinned since the last pin,
					// and what this instance holds is its own still.
					s.fence.pin = pin
					s.fence.pins.extend(pin)
					s.log.Info("pinned again, to the consumer this instance re-created; what it holds goes on", s.logAttrs()...)
					s.unpark(ctx)
					return
				}
				s.fence.pin = pin
				s.fence.pins.start(pin)
				s.log.Info("pinned: this instance is active", s.logAttrs()...)
				s.takeOver(ctx)
				return
			}
			parked := s.fence.parked
			s.fence.parked = nil
			if err != nil {
				s.log.Warn("could not ask which instance is pinned; the messages of the new pin come again", s.logAttrs("error", err)...)
				parked = slices.DeleteFunc(parked, func(d delivery) bool { return jsclient.ServerPin(d.msg.Headers()) == pin })
			} else {
				s.log.Info("a message came with a pin the server does not hold; left to the instance pinned now", s.logAttrs("pinned", pinned != "")...)
				s.fence.notPin = pin
			}
			for _, d := range parked {
				s.hub.add(ctx, d)
			}
		}
	})
}

// followsOn reports whether a pin the server just confirmed follows on
// from this instance's last without anyone else pinned between: the
// consumer is one this instance re-created for a partition whose lease it
// held throughout, and this is the first pin it confirmed on it.
func (s *streamWriter) followsOn() bool {
	made := s.cur.remade
	s.cur.remade = time.Time{}
	return s.part != nil && s.fence.pin != "" && s.pulling() && !made.IsZero() && made.Equal(s.consCreated())
}

// unpark takes in again the deliveries parked while a pin was confirmed.
func (s *streamWriter) unpark(ctx context.Context) {
	parked := s.fence.parked
	s.fence.parked = nil
	for _, d := range parked {
		s.hub.add(ctx, d)
	}
}

// forgetFenced deletes the intent (id) of a batch its fence stopped, when
// its object is not stored: the instance pinned now took over before the
// intent was written, so no recovery will ever look at it, and it would
// stay in the state bucket for good. The key may hold the object the
// instance pinned now stored there, under its own intent. An intent whose
// object is there (an earlier attempt passed the fence and was stored) is
// left to the instance pinned now, which found it when it took over.
func (e *session) forgetFenced(ctx context.Context, res *result, id string) {
	if e.intents == nil {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	md, err := e.store.Head(fctx, res.key)
	if err == nil && md[objstore.MetaIntent] == id || err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return
	}
	if err := e.intents.Delete(fctx, res.intentKey); err != nil {
		e.log.Warn("could not delete the intent of a fenced batch", "key", res.key, "intent", res.intentKey, "error", err)
		return
	}
	res.intentKey = ""
}

// unpinnedEvery is how often an instance of a pinned consumer read
// ack-less looks for one nobody is pinned to that delivered what the
// export record lacks.
const unpinnedEvery = 5 * time.Second

// unpinnedChore looks, beside the loop, at the pinned consumer of s when s
// is read ack-less. The server tells a client it is pinned only on a
// message it delivers, and pins nobody while nothing is pending: an
// instance pinned before this one that took every message and died with
// them unexported, or a consumer leader change (which unpins) that lost
// deliveries on the way, leaves a consumer with nothing pending and nobody
// pinned, which would stay so. When the consumer is so and it delivered
// past the export record's floor, it is moved back to the first sequence
// after it: the instance pinned next takes the consumer over on those
// messages, and its ledger skips what is exported. A move never writes
// anything, so another instance pinned meanwhile loses nothing by it.
func (s *streamWriter) unpinnedChore() *chore {
	if s.cfg.Failover != config.FailoverPinned {
		return nil
	}
	c := &chore{name: "unpinned"}
	c.due = func(now time.Time, final bool) bool {
		return !final && s.mode.AckLess && s.pulling() && !s.fence.takingOver && !s.cur.checking &&
			now.Sub(c.done) >= unpinnedEvery
	}
	c.start = func(time.Time) choreWork {
		cons := s.cur.cons
		return func(ctx context.Context) (func(), error) {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			from, behind, err := s.unpinnedBehind(cctx, cons)
			if err != nil || from == 0 {
				return func() { s.cur.lookedUnpinned, s.cur.behind = err == nil, err != nil || behind }, err
			}
			moved, err := jsclient.Move(cctx, s.sn.js, s.stream, s.sn.cfg.Name, s.cfg, cons, from, from)
			return func() {
				s.cur.lookedUnpinned, s.cur.behind = true, true
				if err != nil {
					s.log.Warn("nobody is pinned to the consumer, which delivered past the export record, and it could not be moved back; trying again", s.logAttrs("error", err)...)
					return
				}
				s.log.Warn("nobody is pinned to the consumer, which delivered past the export record: moved back, for the instance pinned next", s.logAttrs("deliver_from", from)...)
				s.rebuilt(rebuildBehind)
				if moved != nil && s.pulling() {
					s.repull(moved)
				}
			}, nil
		}
	}
	return c
}

// unpinnedBehind looks, beside the loop, at cons, the consumer s pulls.
// It reports behind when the consumer delivered messages of s's subjects
// past the export record's floor: some instance holds them, or nobody
// does. It returns the sequence to move the consumer back to, the first
// after the floor, only when nobody is pinned to it (for a partition,
// whoever is), it has nothing pending and a client waits on it; 0
// otherwise: an instance pinned, or one pinned next, takes them over.
func (s *streamWriter) unpinnedBehind(ctx context.Context, cons jetstream.Consumer) (from uint64, behind bool, err error) {
	ci, err := cons.Info(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("consumer info: %w", err)
	}
	var floor uint64
	if s.sn.intents != nil {
		rec, _, err := state.LoadRecord(ctx, s.sn.intents, s.record.key)
		var bad *state.UnreadableRecordError
		switch {
		case errors.As(err, &bad):
		case err != nil:
			return 0, false, err
		case rec != nil && rec.StreamCreated.Equal(s.created):
			floor = rec.Floor
		}
	}
	floor = max(floor, jsclient.Proven(ci))
	if ci.Delivered.Stream <= floor {
		return 0, false, nil
	}
	// A filtered consumer's delivered sequence passes other subjects'
	// messages: only one of its own in between is behind.
	filters := s.cfg.Subjects
	if len(filters) == 0 || !s.filtered {
		filters = []string{">"}
	}
	q, err := jsclient.NextMessage(ctx, s.sn.nc, s.sn.cfg.NATS, s.cfg.Stream, floor+1, filters)
	if err != nil || q == 0 || q > ci.Delivered.Stream {
		return 0, false, err
	}
	// A partition's consumer is pulled by its lease holder alone: pinned,
	// it is pinned to this instance (which learns it only from a message,
	// and gets none while nothing is pending), or to the holder before,
	// which pulls no more.
	pinnedElsewhere := jsclient.PinnedIn(ci) != "" && s.part == nil
	if pinnedElsewhere || ci.NumPending > 0 || ci.NumWaiting == 0 {
		return 0, true, nil
	}
	return floor + 1, true, nil
}
