package exporter

import "time"

// ledger is the runner's own account of which sequences of a stream are
// exported, in ranges. It never trusts the consumer's delivered sequence or
// ack floor alone: a purge moves both past what it removed, whether it was
// exported or not. Every sequence up to the frontier is in one of these
// states:
//
//   - up to the floor: in a stored object or loss marker, or not in scope;
//   - done: the same, above the floor;
//   - held by the runner (the seqBook's business), or waiting for an
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
// ranges go there too. Only the runner goroutine uses a ledger.
type ledger struct {
	floor    uint64
	frontier uint64
	done     rangeSet
	holes    rangeSet
	marking  rangeSet
	// head holds the holes the consumer never reached because the stream's
	// first sequence moved past them. A filtered consumer can not tell
	// which removed sequences matched its filter: head holes that are gone
	// get a marker that says so; other gone holes were of other subjects.
	head     rangeSet
	filtered bool
	// retained: the stream keeps each message the consumer's filter
	// matches until the consumer acks it (work-queue and interest
	// retention), so a first sequence that moves past a filtered
	// consumer's frontier is other consumers' acks, not evidence that
	// any of its own messages are gone: it makes no head holes.
	retained bool
	rev      uint64 // counts changes of the floor and done ranges
}

// newLedger starts a ledger whose floor is floor, with what the export
// record says is done above it, for a stream whose first sequence is
// firstSeq and whose consumer was last delivered delivered. Everything
// between the floor and the highest of those is a hole until the stream is
// walked.
func newLedger(floor uint64, done []Range, firstSeq, delivered uint64, filtered bool) *ledger {
	l := &ledger{floor: floor, frontier: floor, filtered: filtered}
	for _, r := range done {
		l.done.add(r)
	}
	l.settle()
	l.reach(max(firstSeq, 1)-1, true)
	l.reach(delivered, false)
	return l
}

// retain marks the ledger's stream as one that keeps the consumer's
// messages until it acks them: the head holes made so far were made by the
// first sequence alone, and are taken back.
func (l *ledger) retain() {
	l.retained = true
	l.head.removeAll(l.head.runs())
}

// reach moves the frontier up to q: the sequences between are holes. head
// says the consumer never reached them.
func (l *ledger) reach(q uint64, head bool) {
	if q <= l.frontier {
		return
	}
	r := Range{l.frontier + 1, q}
	l.frontier = q
	for _, gap := range l.freeOf(r, &l.done) {
		l.holes.add(gap)
		if head && l.filtered && !l.retained {
			l.head.add(gap)
		}
	}
}

// accounted reports whether q is exported, marked or out of scope already:
// a delivery of it is acked, not written again.
func (l *ledger) accounted(q uint64) bool {
	return q <= l.floor || l.done.has(q) || l.marking.has(q)
}

// delivered records the delivery of q, a sequence not accounted for, which
// the runner now holds. Above the frontier, the sequences skipped are holes
// of a consumer that sees the whole stream; a filtered consumer delivers in
// order, so what it skipped was of other subjects (or removed, which it can
// not tell).
func (l *ledger) delivered(q uint64) {
	if q > l.frontier {
		if l.filtered {
			if l.frontier+1 < q {
				l.done.add(Range{l.frontier + 1, q - 1})
			}
			l.frontier = q
			l.settle()
			return
		}
		l.reach(q-1, false)
		l.frontier = q
		return
	}
	r := Range{q, q}
	l.holes.remove(r)
	l.head.remove(r)
}

// stored records sequences in a stored object or marker.
func (l *ledger) stored(r Range) { l.storedAll([]Range{r}) }

// storedAll records the sequences of a stored object, sorted and disjoint
// ranges.
func (l *ledger) storedAll(rs []Range) {
	l.holes.removeAll(rs)
	l.head.removeAll(rs)
	l.done.addAll(rs)
	l.settle()
}

// wait takes r, the sequences of an unresolved intent, out of the holes:
// whether they are stored is up to the intent's object.
func (l *ledger) wait(r Range) {
	l.holes.remove(r)
	l.head.remove(r)
}

// returned records held sequences that were not stored: their messages
// come back, unless the stream removes them first.
func (l *ledger) returned(q uint64) {
	if q > l.floor && !l.done.has(q) {
		l.holes.add(Range{q, q})
	}
}

// settle moves the floor over the done ranges that start right above it.
func (l *ledger) settle() {
	l.rev++
	l.floor = l.done.absorb(l.floor)
	l.frontier = max(l.frontier, l.floor)
}

// record returns the export record of the ledger.
func (l *ledger) record(created, now time.Time) exportRecord {
	return exportRecord{StreamCreated: created, Floor: l.floor, Done: rangesToSeqSet(l.done.runs()), Updated: now.UTC()}
}

// toWalk returns up to n hole ranges to look up in the stream.
func (l *ledger) toWalk(n int) []Range {
	rs := l.holes.runs()
	return append([]Range(nil), rs[:min(n, len(rs))]...)
}

// walked applies what a walk of the stream found: of the ranges scanned,
// the sequences in existing are still in the stream and stay holes until
// they come back; the others are gone. It returns the gone holes that need
// a loss marker, now marking, and whether they are head holes of a
// filtered consumer (which may hold other subjects' sequences). Gone holes
// of a filtered consumer outside the head were of other subjects: done.
func (l *ledger) walked(scanned []Range, existing []uint64) (lost, headLost []Range) {
	for _, sc := range scanned {
		for _, h := range l.holes.within(sc) {
			at := h.First
			for _, q := range existingWithin(existing, h) {
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
func (l *ledger) gone(r Range, lost, headLost []Range) ([]Range, []Range) {
	l.holes.remove(r)
	if !l.filtered {
		l.marking.add(r)
		return append(lost, r), headLost
	}
	for _, h := range l.head.within(r) {
		l.marking.add(h)
		headLost = append(headLost, h)
	}
	l.head.remove(r)
	for _, other := range l.freeOf(r, &l.marking) {
		l.done.add(other)
	}
	return lost, headLost
}

// freeOf returns the parts of r not in s.
func (l *ledger) freeOf(r Range, s *rangeSet) []Range {
	var out []Range
	at := r.First
	for _, d := range s.within(r) {
		if d.First > at {
			out = append(out, Range{at, d.First - 1})
		}
		at = next(d.Last)
		if d.Last == r.Last {
			return out
		}
	}
	if at <= r.Last {
		out = append(out, Range{at, r.Last})
	}
	return out
}

// marked records a stored loss marker of r.
func (l *ledger) marked(r Range) {
	l.marking.remove(r)
	l.stored(r)
}

// unmarked records a loss marker of r that was not stored: r is a hole
// again, and the next walk finds it gone again.
func (l *ledger) unmarked(r Range) {
	l.marking.remove(r)
	for _, h := range l.freeOf(r, &l.done) {
		l.holes.add(h)
	}
}

// existingWithin returns the sequences of sorted seqs inside r.
func existingWithin(seqs []uint64, r Range) []uint64 {
	lo, hi := 0, len(seqs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if seqs[m] < r.First {
			lo = m + 1
		} else {
			hi = m
		}
	}
	end := lo
	for end < len(seqs) && seqs[end] <= r.Last {
		end++
	}
	return seqs[lo:end]
}
