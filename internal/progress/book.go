package progress

import (
	"slices"

	"github.com/jetlake/jetlake/lossmarker"
)

// Book is the one account of a stream's sequences that a runner keeps:
// which it holds (delivered, not yet acked or abandoned) and how many of
// those are in sealed batches; which are stored already and must be acked,
// not written, when they come back; which wait until the store says
// whether an unresolved intent's object exists; which intents are still
// needed; and, once started, the Ledger: the floor, the done ranges, the
// holes and what is being marked lost.
//
// An intent is needed while its batch is in flight, while its object's
// existence is unresolved, and, once its batch was stored, until the
// recorded floor passes the batch.
//
// Every event that changes a sequence's state is one call, which updates
// every part it touches. Before Start (recovery has not run, or a pinned
// consumer's instance is not pinned) the Book keeps intents only:
// deliveries are Unready and left to the server.
//
// The zero value is an empty Book. Only one goroutine uses it.
type Book struct {
	led        *Ledger
	held       Held
	sealed     int             // of the held, messages in sealed batches
	committed  Set             // stored in an object whose acks are not confirmed (or a confirmed batch's, expanded)
	unresolved map[string]Seqs // intents whose object was missing when found, by intent key
	pending    Set             // their sequences
	own        map[string]bool // intents of this process's batches in flight
	retired    []*retired      // intents of stored batches, kept until the floor passes them
}

// retired is a stored batch whose intent is kept: its messages may come
// back and must then be acked, not written again.
type retired struct {
	intentKey string
	last      uint64 // highest sequence: the intent is forgotten once the floor passes it
	set       Seqs   // the sequences it put in the committed set

	// A batch whose acks were confirmed keeps its sequences here: the
	// server confirms the last ack, but when its consumer leader changed
	// while the acks went out, earlier ones can be lost, and their
	// messages come back. expand makes them committed then.
	first   uint64
	encoded []byte // Seqs.MarshalJSON, until expanded
}

// Class is what a delivered sequence is to the Book.
type Class int

const (
	// New is a sequence not known yet: the runner holds it now and
	// exports it.
	New Class = iota
	// Holding is a sequence the runner holds already: the copy held is
	// acked once stored.
	Holding
	// Stored is a sequence in a stored object or loss marker (or out of
	// scope): ack it, do not write it again.
	Stored
	// Waiting is a sequence of an unresolved intent: keep its delivery
	// until the store says whether the intent's object exists.
	Waiting
	// Unready is any sequence before Start: leave it to the server,
	// which delivers it again.
	Unready
)

// Start starts the Ledger from the export record (floor and done ranges)
// of a stream whose first sequence is firstSeq and whose consumer was last
// delivered delivered, with what recovery found: committed sequences are
// done, unresolved ones wait. retained is work-queue or interest retention
// (see Ledger.Retain). A Book started before starts anew.
func (b *Book) Start(floor uint64, done []Range, firstSeq, delivered uint64, filtered, retained bool) {
	l := NewLedger(floor, done, firstSeq, delivered, filtered)
	if retained {
		l.Retain()
	}
	l.StoredAll(b.committed.Runs())
	// Batches this process stored above the floor are exported whatever
	// the record read back says: it is written beside the loop, and a
	// recovery right after an upload reads it without them.
	for _, c := range b.retired {
		if set, ok := c.seqs(); ok {
			l.StoredAll(set.Ranges())
		}
	}
	for _, r := range b.pending.Runs() {
		l.Wait(r)
	}
	b.led = l
}

// Started reports whether the Book has a Ledger.
func (b *Book) Started() bool { return b.led != nil }

// Ledger returns the Book's Ledger, nil before Start. It is for reading
// and for walks; what changes a held or stored sequence goes through the
// Book.
func (b *Book) Ledger() *Ledger { return b.led }

// Stop forgets the Ledger until the next Start: recovery runs again.
func (b *Book) Stop() { b.led = nil }

// Reset forgets the Ledger and what an earlier recovery found (committed,
// unresolved and retired intents), before recovery runs again. What is held
// stays held: those messages are in buffers still.
func (b *Book) Reset() {
	b.led = nil
	b.committed = Set{}
	clear(b.unresolved)
	b.pending = Set{}
	b.retired = nil
}

// Deliver classifies a delivered sequence and, when it is New, holds it.
// after is the sequence the consumer delivered right before it, with no
// message of its subjects between (0: not known; see Ledger.Delivered). A
// redelivered sequence in the range of a confirmed batch first makes that
// batch's sequences committed: an ack the server confirmed can still have
// been lost.
func (b *Book) Deliver(seq, after uint64, redelivered bool) Class {
	if b.led == nil {
		return Unready
	}
	if b.pending.Has(seq) {
		b.led.Passed(seq, after)
		return Waiting
	}
	if redelivered && len(b.retired) > 0 {
		b.expand(seq)
	}
	switch {
	case b.committed.Has(seq):
		b.led.Passed(seq, after)
		return Stored
	case b.held.Has(seq):
		return Holding
	case b.led.Accounted(seq):
		b.led.Passed(seq, after)
		return Stored
	}
	b.led.Delivered(seq, after)
	b.held.Add(seq)
	return New
}

// Acked forgets a committed sequence whose message came back and was acked
// again.
func (b *Book) Acked(seq uint64) { b.committed.Remove(Range{seq, seq}) }

// Release forgets a held sequence whose message was acked, terminated or
// abandoned.
func (b *Book) Release(seq uint64) { b.held.Remove(seq) }

// Counts returns how many sequences are held and how many of those are in
// sealed batches.
func (b *Book) Counts() (held, sealed int) { return b.held.Len(), b.sealed }

// Seal records a sealed batch of n held messages under its intent key: the
// intent is this process's own until BatchDone.
func (b *Book) Seal(ikey string, n int) {
	if b.own == nil {
		b.own = map[string]bool{}
	}
	b.own[ikey] = true
	b.sealed += n
}

// Outcome is how a sealed batch ended.
type Outcome struct {
	Stored    bool   // its object is stored
	Confirmed bool   // and the server confirmed its acks
	Intent    string // the key of the intent written for it; "" when none was
	// Seqs are the batch's sequences, First and Last its lowest and
	// highest, and Encoded its Seqs.MarshalJSON as the intent holds
	// it (kept for a confirmed batch, expanded if its messages come
	// back).
	Seqs        Seqs
	First, Last uint64
	Encoded     []byte
}

// BatchDone records the end of a sealed batch of n messages, sealed under
// ikey, whose held sequences the caller has released. A stored
// batch is done; one whose acks are not confirmed is committed too (its
// messages are acked, not written, when they come back), and its intent,
// if one was written, is kept until the floor passes it. The sequences of a batch not stored
// return: their messages come back unless the stream removes them first.
func (b *Book) BatchDone(ikey string, n int, o Outcome) {
	delete(b.own, ikey)
	b.sealed -= n
	if b.led != nil {
		if o.Stored {
			b.led.StoredAll(o.Seqs.Ranges())
		} else {
			b.led.ReturnedAll(o.Seqs.Ranges())
		}
	}
	switch {
	case o.Stored && !o.Confirmed:
		b.commit(o.Intent, o.Seqs)
	case o.Confirmed && o.Intent != "":
		b.retired = append(b.retired, &retired{intentKey: o.Intent, first: o.First, last: o.Last, encoded: o.Encoded})
	}
}

// MarkerDone records the end of a loss marker of runs (the marker's
// Runs). term are the held sequences the marker names (poison messages, terminated once it is
// stored; nil for sequences gone from the stream), released here. A marker
// not stored makes gone sequences holes again, which the next walk finds
// gone again, and returns held ones.
func (b *Book) MarkerDone(runs []lossmarker.Range, term []uint64, stored bool) {
	for _, q := range term {
		b.held.Remove(q)
	}
	if b.led == nil {
		return
	}
	for _, mr := range runs {
		switch r := Range(mr); {
		case stored:
			b.led.Marked(r)
		case term == nil:
			b.led.Unmarked(r)
		}
	}
	if !stored {
		for _, q := range term {
			b.led.Returned(q)
		}
	}
}

// Found records the stored batch of an intent that recovery found: its
// sequences are done, and committed until the floor passes them.
func (b *Book) Found(ikey string, seqs Seqs) {
	b.commit(ikey, seqs)
	if b.led != nil {
		b.led.StoredAll(seqs.Ranges())
	}
}

// Await records an intent whose object is missing: its messages wait until
// Resolve.
func (b *Book) Await(ikey string, seqs Seqs) {
	if b.unresolved == nil {
		b.unresolved = map[string]Seqs{}
	}
	b.unresolved[ikey] = seqs
	b.pending.AddAll(seqs.Ranges())
	if b.led != nil {
		for _, r := range seqs.Ranges() {
			b.led.Wait(r)
		}
	}
}

// Unresolved reports whether ikey is an intent the Book awaits.
func (b *Book) Unresolved(ikey string) bool {
	_, ok := b.unresolved[ikey]
	return ok
}

// Resolve forgets an unresolved intent: its object was found (stored: its
// sequences are as Found makes them) or it never will be (its sequences
// return and are exported anew).
func (b *Book) Resolve(ikey string, stored bool) {
	seqs, ok := b.unresolved[ikey]
	if !ok {
		return
	}
	delete(b.unresolved, ikey)
	// Rebuilt from the intents left: two may name one sequence.
	b.pending = Set{}
	for _, o := range b.unresolved {
		b.pending.AddAll(o.Ranges())
	}
	if stored {
		b.Found(ikey, seqs)
	} else if b.led != nil {
		b.led.ReturnedAll(seqs.Ranges())
	}
	if b.led != nil {
		for _, r := range b.pending.Runs() {
			b.led.Wait(r)
		}
	}
}

// PassFloor forgets the stored batches the recorded floor has passed:
// every message of them was acked and no reset can replay them. It returns
// the intent keys that are no longer needed.
func (b *Book) PassFloor(floor uint64) []string {
	var forget []string
	b.retired = slices.DeleteFunc(b.retired, func(c *retired) bool {
		if c.last <= floor {
			b.committed.RemoveAll(c.set.Ranges())
			forget = append(forget, c.intentKey)
			return true
		}
		return false
	})
	return forget
}

// Known returns the intent keys the Book accounts for: this process's own
// batches in flight, unresolved intents, and stored batches above the
// floor. Recovery leaves them alone.
func (b *Book) Known() map[string]bool {
	known := map[string]bool{}
	for _, c := range b.retired {
		known[c.intentKey] = true
	}
	for ikey := range b.own {
		known[ikey] = true
	}
	for ikey := range b.unresolved {
		known[ikey] = true
	}
	return known
}

// commit records a stored batch whose acks are not confirmed.
func (b *Book) commit(ikey string, seqs Seqs) {
	b.committed.AddAll(seqs.Ranges())
	b.retired = append(b.retired, &retired{intentKey: ikey, last: seqs.Last(), set: seqs})
}

// Rewound records that the consumer was moved back: it delivers again,
// as first deliveries, messages of batches this process stored, whose
// acks the server confirmed. Their sequences are committed again, so that
// they are acked, not written again.
func (b *Book) Rewound() {
	for _, c := range b.retired {
		b.recommit(c)
	}
}

// recommit makes the sequences of stored batch c committed again, its
// set decoded once.
func (b *Book) recommit(c *retired) {
	if set, ok := c.seqs(); ok {
		b.committed.AddAll(set.Ranges())
		c.set = set
	}
	c.encoded = nil
}

// seqs returns the sequences of a stored batch: decoded from its intent's
// encoding while its messages have not come back, or its set.
func (c *retired) seqs() (Seqs, bool) {
	if len(c.encoded) == 0 {
		return c.set, true
	}
	var set Seqs
	if err := set.UnmarshalJSON(c.encoded); err != nil {
		return Seqs{}, false
	}
	return set, true
}

// expand makes the sequences of every confirmed batch whose range holds seq
// committed, so that a message coming back after its ack was lost is acked
// again, not written again.
func (b *Book) expand(seq uint64) {
	for _, c := range b.retired {
		if len(c.encoded) == 0 || seq < c.first || seq > c.last {
			continue
		}
		b.recommit(c)
	}
}
