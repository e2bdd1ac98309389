package progress

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The ledger against a naive model: a state per sequence in a map, driven
// by the same deliveries, stores, returns, removals by the stream, walks,
// markers and takeovers. After every step both must agree on every
// sequence: whether it is accounted for (a redelivery is acked without
// being written), whether it is a hole, and where the floor is.

// seqState is what the model knows of one sequence.
type seqState uint8

const (
	unknown seqState = iota // above the frontier
	hole                    // fate unknown: comes back, or is lost
	held                    // delivered to the runner, not stored yet
	done                    // stored in an object or a marker, or another subject's
	marking                 // gone from the stream; its marker is being written
)

// model is the naive account of one stream and consumer.
type model struct {
	filtered bool
	retained bool
	state    map[uint64]seqState
	head     map[uint64]bool // holes the consumer never reached: the first sequence moved past them
	stream   map[uint64]bool // the sequences the stream holds
	last     uint64          // the stream's last sequence
	cursor   uint64          // the consumer's last delivered sequence
	reached  uint64          // the highest it ever delivered, before a reset moved it back
	frontier uint64
	// anchor is the last delivery in the consumer's order: the next one
	// follows it directly (0: none, after a takeover, a reset or a
	// delivery out of order).
	anchor uint64
	stored map[uint64]bool // the sequences stored in an object
}

// matches is the consumer's filter: a filtered consumer reads the odd
// sequences (one subject of two).
func (m *model) matches(q uint64) bool { return !m.filtered || q%2 == 1 }

// firstSeq is the stream's first sequence.
func (m *model) firstSeq() uint64 {
	for q := uint64(1); q <= m.last; q++ {
		if m.stream[q] {
			return q
		}
	}
	return m.last + 1
}

// floor is the highest q such that every sequence up to q is done.
func (m *model) floor() uint64 {
	q := uint64(0)
	for m.state[q+1] == done {
		q++
	}
	return q
}

// reach makes the unknown sequences up to q holes (head: the consumer
// never reached them).
func (m *model) reach(q uint64, head bool) {
	for s := m.frontier + 1; s <= q; s++ {
		if m.state[s] == unknown {
			m.state[s] = hole
			if head && m.filtered && !m.retained {
				m.head[s] = true
			}
		}
	}
	m.frontier = max(m.frontier, q)
}

// deliver applies a delivery of q, as the runner does: acked when
// accounted for, held otherwise. inOrder: the consumer delivers it right
// after the anchor; otherwise it is one sent before a reset, arriving late.
func (m *model) deliver(l *Ledger, q uint64, inOrder bool) {
	if got, want := l.Accounted(q), m.state[q] == done || m.state[q] == marking; got != want {
		panic(fmt.Sprintf("Accounted(%d) = %v, model %v", q, got, want))
	}
	var after uint64
	if inOrder && m.anchor != 0 && m.anchor < q {
		after = m.anchor
	}
	m.anchor = 0
	if inOrder {
		m.anchor = q
	}
	if m.state[q] == held {
		return // held: delivered before, at or below the frontier
	}
	accounted := m.state[q] == done || m.state[q] == marking
	if accounted {
		l.Passed(q, after) // acked again, not held; the frontier moves all the same
	} else {
		l.Delivered(q, after)
	}
	if q > m.frontier {
		fill := m.filtered && after != 0 && after <= m.frontier
		for s := m.frontier + 1; s < q; s++ {
			if m.state[s] == unknown {
				if fill {
					m.state[s] = done
				} else {
					m.state[s] = hole
				}
			}
		}
		m.frontier = q
	}
	if accounted {
		return
	}
	m.state[q] = held
	delete(m.head, q)
}

// check compares the ledger with the model.
func (m *model) check(t *testing.T, l *Ledger, step string) {
	t.Helper()
	if got, want := l.Floor(), m.floor(); got != want {
		t.Fatalf("%s: floor %d, model %d", step, got, want)
	}
	for q := uint64(1); q <= m.last+2; q++ {
		st := m.state[q]
		if got, want := l.Accounted(q), st == done || st == marking; got != want {
			t.Fatalf("%s: Accounted(%d) = %v, model state %d", step, q, got, st)
		}
		if got, want := l.IsHole(q), st == hole; got != want {
			t.Fatalf("%s: IsHole(%d) = %v, model state %d", step, q, got, st)
		}
		// The model's own rules, against what happened: a message of the
		// consumer's subjects that the stream holds is done only once
		// stored.
		if st == done && m.stream[q] && m.matches(q) && !m.stored[q] {
			t.Fatalf("%s: %d is done, yet the stream holds it and it was never stored", step, q)
		}
	}
}

// runModel drives a ledger and the model with ops, one byte a step.
func runModel(t *testing.T, filtered, retained bool, ops []byte) {
	m := &model{filtered: filtered, retained: retained, state: map[uint64]seqState{}, head: map[uint64]bool{}, stream: map[uint64]bool{},
		stored: map[uint64]bool{}}
	l := NewLedger(0, nil, 1, 0, filtered)
	if retained {
		l.Retain()
	}
	pick := func(b byte, want func(q uint64) bool) uint64 {
		var cands []uint64
		for q := uint64(1); q <= m.last; q++ {
			if want(q) {
				cands = append(cands, q)
			}
		}
		if len(cands) == 0 {
			return 0
		}
		return cands[int(b>>3)%len(cands)]
	}
	for i, op := range ops {
		step := fmt.Sprintf("step %d (op %d)", i, op%11)
		switch op % 11 {
		case 0: // publish
			m.last++
			m.stream[m.last] = true
		case 1: // the consumer delivers the next message it matches
			for q := m.cursor + 1; q <= m.last; q++ {
				if m.stream[q] && m.matches(q) {
					m.cursor, m.reached = q, max(m.reached, q)
					m.deliver(l, q, true)
					break
				}
			}
		case 2: // a held message is stored
			if q := pick(op, func(q uint64) bool { return m.state[q] == held }); q != 0 {
				l.Stored(Range{q, q})
				m.state[q], m.stored[q] = done, true
			}
		case 3: // a held message is given up: it comes back, if it still can
			if q := pick(op, func(q uint64) bool { return m.state[q] == held }); q != 0 {
				l.Returned(q)
				m.state[q] = hole
			}
		case 4: // a hole comes back (redelivered after AckWait)
			if q := pick(op, func(q uint64) bool { return m.state[q] == hole && m.stream[q] && m.matches(q) }); q != 0 {
				m.deliver(l, q, true)
			}
		case 5: // the stream removes a message: limits from the head, or a delete
			q := m.firstSeq()
			if op&0x80 != 0 {
				q = pick(op, func(q uint64) bool { return m.stream[q] })
			}
			delete(m.stream, q)
		case 6: // a walk of the holes, then the first sequence as the runner reaches it
			holes := l.ToWalk(1 << 20)
			var existing []uint64
			for _, h := range holes {
				for q := h.First; q <= h.Last; q++ {
					if m.stream[q] && m.matches(q) {
						existing = append(existing, q)
					}
				}
			}
			lost, headLost := walked(l, holes, existing)
			var wantLost, wantHead []uint64
			for _, h := range holes {
				for q := h.First; q <= h.Last; q++ {
					if m.state[q] != hole || m.stream[q] && m.matches(q) {
						continue
					}
					switch {
					case !m.filtered:
						m.state[q] = marking
						wantLost = append(wantLost, q)
					case m.head[q]:
						m.state[q] = marking
						wantHead = append(wantHead, q)
					default:
						m.state[q] = done // another subject's, as far as the consumer can tell
					}
					delete(m.head, q)
				}
			}
			if got := expand(lost); fmt.Sprint(got) != fmt.Sprint(wantLost) {
				t.Fatalf("%s: lost %v, model %v", step, got, wantLost)
			}
			if got := expand(headLost); fmt.Sprint(got) != fmt.Sprint(wantHead) {
				t.Fatalf("%s: head lost %v, model %v", step, got, wantHead)
			}
			first := m.firstSeq()
			l.Reach(first-1, true)
			m.reach(first-1, true)
		case 7: // a marker stored, or not
			if q := pick(op, func(q uint64) bool { return m.state[q] == marking }); q != 0 {
				if op&0x80 != 0 {
					l.Marked(Range{q, q})
					m.state[q] = done
				} else {
					l.Unmarked(Range{q, q})
					m.state[q] = hole
				}
			}
		case 9: // the consumer is moved back to the floor: it delivers from there again
			m.cursor, m.anchor = l.Floor(), 0
		case 10: // a message the consumer sent before it was moved back arrives late
			if q := pick(op, func(q uint64) bool { return q > m.cursor && q <= m.reached && m.stream[q] && m.matches(q) }); q != 0 {
				m.deliver(l, q, false)
			}
		case 8: // a takeover: a new ledger from the record; nothing held, nothing marking
			m.anchor = 0
			l = NewLedger(l.Floor(), l.Done(), m.firstSeq(), m.cursor, filtered)
			if retained {
				l.Retain()
			}
			for q, st := range m.state {
				if st == held || st == marking {
					m.state[q] = hole
				}
			}
			m.head = map[uint64]bool{}
			first := m.firstSeq()
			m.frontier = m.floor()
			for q := m.frontier + 1; q <= max(first-1, m.cursor); q++ {
				if m.state[q] == done {
					continue
				}
				m.state[q] = hole
				if q < first && m.filtered && !m.retained {
					m.head[q] = true
				}
			}
			for q := max(first-1, m.cursor) + 1; q <= m.last+2; q++ {
				if m.state[q] != done {
					m.state[q] = unknown
				}
			}
			m.frontier = max(m.frontier, first-1, m.cursor)
		}
		m.check(t, l, step)
	}
}

// expand returns the sequences of rs.
func expand(rs []Range) []uint64 {
	var out []uint64
	for _, r := range rs {
		for q := r.First; q <= r.Last; q++ {
			out = append(out, q)
		}
	}
	return out
}

func FuzzLedgerAgreesWithAMapModel(f *testing.F) {
	f.Add(byte(0), []byte{0, 0, 0, 1, 1, 2, 1, 5, 6, 7 | 0x80, 8, 1, 2})
	f.Add(byte(1), []byte{0, 0, 0, 0, 1, 1, 5, 5, 6, 8, 6, 7, 6, 7 | 0x80})
	f.Add(byte(2), []byte{0, 0, 1, 3, 8, 4, 2, 0, 1, 5 | 0x80, 6})
	f.Fuzz(func(t *testing.T, mode byte, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		runModel(t, mode&1 != 0, mode&2 != 0, ops)
	})
}

// Many random runs of the model, in every mode, for go test without -fuzz.
func TestLedgerAgreesWithAMapModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for run := range 400 {
		mode := byte(run % 4)
		ops := make([]byte, 150)
		for i := range ops {
			ops[i] = byte(rng.IntN(256))
			if rng.IntN(4) == 0 {
				ops[i] = byte(rng.IntN(256)) &^ 0xf // publishes: op 0 more often
				ops[i] -= ops[i] % 9
			}
		}
		t.Run(fmt.Sprintf("run%d-mode%d", run, mode), func(t *testing.T) {
			runModel(t, mode&1 != 0, mode&2 != 0, ops)
		})
	}
}
