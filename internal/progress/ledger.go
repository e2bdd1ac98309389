package progress

import "github.com/jetlake/jetlake/lossmarker"

// Ledger is the runner's own account of which sequences of a stream are
// exported, in ranges. It never trusts the consumer's delivered sequence or
// ack floor alone: a purge moves both past what it removed, whether it was
// exported or not. Every sequence up to the frontier is in one of these
// states:
//
//   - up to the floor: in a stored object or loss marker, or not in scope;
//   - done: the same, above the floor;
//   - held by the runner (the Book's business), or waiting for an
//     unresolved intent;
//   - marking: gone from the stream before it was exported; its loss marker
//     is being written;
//   - a hole: not delivered to this process, fate unknown. A hole is a
//     message delivered to an earlier process and not acked yet, one that
//     comes back after a lost delivery, or one the stream removed. Walking
//     the stream tells which: what is still there comes back; what is gone
//     is lost.
//
// The floor is what the export record in the state bucket keeps; done
// ranges go there too. Only the runner goroutine uses a Ledger.
type Ledger struct {
	floor    uint64
	frontier uint64
	done     Set
	holes    Set
	marking  Set
	// waiting holds the sequences of unresolved intents not known to be
	// done: neither holes nor done until the intent is resolved.
	waiting Set
	// head holds the holes the consumer never reached because the stream's
	// first sequence moved past them. A filtered consumer can not tell
	// which removed sequences matched its filter: head holes that are gone
	// get a marker that says so; other gone holes were of other subjects.
	head     Set
	filtered bool
	// retained: the stream keeps each message the consumer's filter
	// matches until the consumer acks it (work-queue and interest
	// retention), so a first sequence that moves past a filtered
	// consumer's frontier is other consumers' acks, not evidence that
	// any of its own messages are gone: it makes no head holes.
	retained bool
	rev      uint64 // counts changes of the floor and done ranges
}

// NewLedger starts a Ledger whose floor is floor, with what the export
// record says is done above it, for a stream whose first sequence is
// firstSeq and whose consumer was last delivered delivered. Everything
// between the floor and the highest of those is a hole until the stream is
// walked.
func NewLedger(floor uint64, done []Range, firstSeq, delivered uint64, filtered bool) *Ledger {
	l := &Ledger{floor: floor, frontier: floor, filtered: filtered}
	for _, r := range done {
		l.done.Add(r)
	}
	l.settle()
	l.Reach(max(firstSeq, 1)-1, true)
	l.Reach(delivered, false)
	return l
}

// Retain marks the Ledger's stream as one that keeps the consumer's
// messages until it acks them: the head holes made so far were made by the
// first sequence alone, and are taken back.
func (l *Ledger) Retain() {
	l.retained = true
	l.head = Set{}
}

// Reach moves the frontier up to q: the sequences between are holes. head
// says the consumer never reached them.
func (l *Ledger) Reach(q uint64, head bool) {
	if q <= l.frontier {
		return
	}
	r := Range{l.frontier + 1, q}
	l.frontier = q
	for _, gap := range l.unknown(r) {
		l.holes.Add(gap)
		if head && l.filtered && !l.retained {
			l.head.Add(gap)
		}
	}
}

// Accounted reports whether q is exported, marked or out of scope already:
// a delivery of it is acked, not written again.
func (l *Ledger) Accounted(q uint64) bool {
	return q <= l.floor || l.done.Has(q) || l.marking.Has(q)
}

// Delivered records the delivery of q, a sequence not accounted for, which
// the runner now holds. after is the sequence the consumer delivered right
// before q with no message of its subjects between them, or 0 when that is
// not known (see Passed).
func (l *Ledger) Delivered(q, after uint64) {
	if q > l.frontier {
		l.Passed(q, after)
		return
	}
	r := Range{q, q}
	l.holes.Remove(r)
	l.head.Remove(r)
}

// Passed records that the consumer delivered q, whatever the runner makes
// of it (held, stored already, or waiting for an unresolved intent): the
// frontier moves up to it. The sequences skipped on the way are holes, to
// be walked, except where after vouches for them: for a filtered
// consumer, after is the sequence delivered right before q with no
// message of its subjects between them, and what lies between was of
// other subjects (or removed, which it can not tell). after vouches only
// from the frontier on, which its own delivery moved past it. A consumer
// moved back delivers below sequences sent before the move, which may
// still arrive: the frontier alone vouches for nothing.
func (l *Ledger) Passed(q, after uint64) {
	if q <= l.frontier {
		return
	}
	if !l.filtered || after == 0 || after > l.frontier {
		l.Reach(q-1, false)
		l.frontier = q
		return
	}
	if l.frontier+1 < q {
		l.done.AddAll(l.unknown(Range{l.frontier + 1, q - 1}))
	}
	l.frontier = q
	l.settle()
}

// Stored records sequences in a stored object or marker.
func (l *Ledger) Stored(r Range) { l.StoredAll([]Range{r}) }

// StoredAll records the sequences of a stored object, sorted and disjoint
// ranges.
func (l *Ledger) StoredAll(rs []Range) {
	l.waiting.RemoveAll(rs)
	l.holes.RemoveAll(rs)
	l.head.RemoveAll(rs)
	l.done.AddAll(rs)
	l.settle()
}

// Wait takes r, the sequences of an unresolved intent, out of the holes:
// whether they are stored is up to the intent's object. Until Stored or
// Returned says, they are neither holes nor done.
func (l *Ledger) Wait(r Range) {
	l.holes.Remove(r)
	l.head.Remove(r)
	if r.Last > l.floor {
		r.First = max(r.First, l.floor+1)
		l.waiting.AddAll(l.done.Outside(r))
	}
}

// unknown returns the parts of r that are neither done nor waiting.
func (l *Ledger) unknown(r Range) []Range {
	gaps := l.done.Outside(r)
	if l.waiting.Empty() {
		return gaps
	}
	var out []Range
	for _, g := range gaps {
		out = append(out, l.waiting.Outside(g)...)
	}
	return out
}

// Returned records held sequences that were not stored: their messages
// come back, unless the stream removes them first.
func (l *Ledger) Returned(q uint64) { l.ReturnedAll([]Range{{q, q}}) }

// ReturnedAll records the sequences of rs, sorted ranges, as Returned
// does, a range at a time.
func (l *Ledger) ReturnedAll(rs []Range) {
	l.waiting.RemoveAll(rs)
	for _, r := range rs {
		if r.Last <= l.floor {
			continue
		}
		r.First = max(r.First, l.floor+1)
		for _, h := range l.done.Outside(r) {
			l.holes.Add(h)
		}
	}
}

// settle moves the floor over the done ranges that start right above it.
func (l *Ledger) settle() {
	l.rev++
	l.floor = l.done.Absorb(l.floor)
	l.frontier = max(l.frontier, l.floor)
}

// Floor returns the floor: every sequence up to it is exported (or out of
// scope).
func (l *Ledger) Floor() uint64 { return l.floor }

// Done returns the ranges above the floor that are exported; the caller
// must not change them.
func (l *Ledger) Done() []Range { return l.done.Runs() }

// Rev counts the changes of the floor and the done ranges: what the
// export record is written from.
func (l *Ledger) Rev() uint64 { return l.rev }

// Holes returns the hole ranges; the caller must not change them.
func (l *Ledger) Holes() []Range { return l.holes.Runs() }

// Frontier returns the highest sequence the Ledger knows of: delivered,
// or reached by the stream's first sequence.
func (l *Ledger) Frontier() uint64 { return l.frontier }

// IsHole reports whether q is a hole.
func (l *Ledger) IsHole(q uint64) bool { return l.holes.Has(q) }

// Unsettled reports whether sequences are holes or being marked lost:
// not known to be exported yet.
func (l *Ledger) Unsettled() bool { return !l.holes.Empty() || !l.marking.Empty() }

// ToWalk returns up to n hole ranges to look up in the stream.
func (l *Ledger) ToWalk(n int) []Range {
	rs := l.holes.Runs()
	return append([]Range(nil), rs[:min(n, len(rs))]...)
}

// Walked applies what a walk of the stream found: of the ranges scanned,
// the sequences in existing are still in the stream and stay holes until
// they come back; the others are gone. It returns the gone holes that need
// a loss marker, now marking, as the ranges of the markers, and whether
// they are head holes of a filtered consumer (which may hold other
// subjects' sequences). Gone holes of a filtered consumer outside the head
// were of other subjects: done.
func (l *Ledger) Walked(scanned []Range, existing []uint64) (lost, headLost []lossmarker.Range) {
	for _, sc := range scanned {
		for _, h := range l.holes.Within(sc) {
			at := h.First
			for _, q := range Within(existing, h) {
				if q > at {
					lost, headLost = l.gone(Range{at, q - 1}, lost, headLost)
				}
				at = q + 1
			}
			if at <= h.Last && at != 0 {
				lost, headLost = l.gone(Range{at, h.Last}, lost, headLost)
			}
		}
	}
	l.settle()
	return lost, headLost
}

// gone records hole r as removed from the stream.
func (l *Ledger) gone(r Range, lost, headLost []lossmarker.Range) ([]lossmarker.Range, []lossmarker.Range) {
	l.holes.Remove(r)
	if !l.filtered {
		l.marking.Add(r)
		return append(lost, lossmarker.Range(r)), headLost
	}
	for _, h := range l.head.Within(r) {
		l.marking.Add(h)
		headLost = append(headLost, lossmarker.Range(h))
	}
	l.head.Remove(r)
	for _, other := range l.marking.Outside(r) {
		l.done.Add(other)
	}
	return lost, headLost
}

// Marked records a stored loss marker of r.
func (l *Ledger) Marked(r Range) {
	l.marking.Remove(r)
	l.Stored(r)
}

// Unmarked records a loss marker of r that was not stored: r is a hole
// again, and the next walk finds it gone again.
func (l *Ledger) Unmarked(r Range) {
	l.marking.Remove(r)
	for _, h := range l.done.Outside(r) {
		l.holes.Add(h)
	}
}

// HasHoles reports whether any sequence is a hole.
func (l *Ledger) HasHoles() bool { return !l.holes.Empty() }
