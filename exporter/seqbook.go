package exporter

import (
	"iter"
	"slices"
	"time"

	"github.com/jetlake/jetlake/exporter/progress"
)

// seqBook is what the runner knows about the sequences of one stream: which
// it holds (received, not yet acked or abandoned) and how many of those are
// in sealed batches; which are stored already and must be acked, not
// written, when they come back; which wait until the store says whether an
// unresolved intent's object exists; and which intents are still needed.
// An intent is needed while its batch is in flight, while its object's
// existence is unresolved, and, once its batch was stored, until the
// consumer's ack floor passes the batch.
//
// The zero value is an empty book. Only the runner goroutine uses it.
type seqBook struct {
	held       progress.Held          // received and not yet acked or abandoned
	sealed     int                    // of those, messages in sealed batches
	committed  progress.Set           // stored in an object whose acks are not confirmed (or a confirmed batch's, expanded)
	unresolved map[string]*unresolved // intents of others whose object was missing, by intent key
	pending    progress.Set           // their sequences
	own        map[string]bool        // intents of this process's batches in flight
	retired    []*committed           // intents of stored batches, kept until the ack floor passes them
}

// committed is a stored batch whose intent is kept: its messages may come
// back and must then be acked, not written again.
type committed struct {
	intentKey string
	last      uint64        // highest sequence: the intent is forgotten once the ack floor passes it
	set       progress.Seqs // the sequences it put in the book's committed set

	// A batch whose acks were confirmed keeps its sequences here: the
	// server confirms the last ack, but when its consumer leader changed
	// while the acks went out, earlier ones can be lost, and their
	// messages come back. expand makes them committed then.
	first uint64
	seqs  []byte // progress.Seqs.MarshalJSON, until expanded
}

// unresolved is an intent whose object was missing when it was found.
type unresolved struct {
	key       string
	in        *intent
	deadline  time.Time
	waiting   map[uint64]delivery // its messages, delivered meanwhile, by sequence
	resolving bool                // the store is being asked
}

// seqClass is what a delivered sequence is to the book.
type seqClass int

const (
	seqNew       seqClass = iota // unknown: export it
	seqHeld                      // held already: the copy held is acked once stored
	seqCommitted                 // stored already: ack it, do not write it again
	seqWaiting                   // of an unresolved intent: wait for the store's answer
)

// classify tells what a delivered sequence is. A redelivered sequence in
// the range of a confirmed batch first makes that batch's sequences
// committed: an ack the server confirmed can still have been lost.
func (b *seqBook) classify(seq uint64, redelivered bool) seqClass {
	if b.pending.Has(seq) {
		return seqWaiting
	}
	if redelivered && len(b.retired) > 0 {
		b.expand(seq)
	}
	if b.committed.Has(seq) {
		return seqCommitted
	}
	if b.held.Has(seq) {
		return seqHeld
	}
	return seqNew
}

// wait keeps d, a delivery of a sequence classified seqWaiting, to be
// replayed once its intent is resolved. Only the latest delivery of a
// message can be acked: the server redelivers it every AckWait while the
// store is asked.
func (b *seqBook) wait(seq uint64, d delivery) {
	u := b.waitingFor(seq)
	if u == nil {
		return
	}
	if u.waiting == nil {
		u.waiting = map[uint64]delivery{}
	}
	u.waiting[seq] = d
}

// waitingFor returns the unresolved intent that names seq, or nil.
func (b *seqBook) waitingFor(seq uint64) *unresolved {
	for _, u := range b.unresolved {
		if seq >= u.in.Seqs.First() && seq <= u.in.Seqs.Last() && u.in.Seqs.Has(seq) {
			return u
		}
	}
	return nil
}

// hold records a sequence the runner keeps until it is acked or abandoned.
func (b *seqBook) hold(seq uint64) { b.held.Add(seq) }

// release forgets a held sequence: acked, terminated or abandoned.
func (b *seqBook) release(seq uint64) { b.held.Remove(seq) }

// counts returns how many sequences are held and how many of those are in
// sealed batches.
func (b *seqBook) counts() (held, sealed int) { return b.held.Len(), b.sealed }

// seal records a sealed batch of n held messages under its intent key: the
// intent is this process's own until unseal.
func (b *seqBook) seal(ikey string, n int) {
	if b.own == nil {
		b.own = map[string]bool{}
	}
	b.own[ikey] = true
	b.sealed += n
}

// unseal records that a sealed batch of n messages is done with, stored
// or not. Its messages are released one by one.
func (b *seqBook) unseal(ikey string, n int) {
	delete(b.own, ikey)
	b.sealed -= n
}

// commit records a stored batch whose acks are not confirmed: its messages
// are acked, not written, when they come back. Its intent is kept until the
// ack floor passes it.
func (b *seqBook) commit(ikey string, seqs progress.Seqs) {
	b.committed.AddAll(seqs.Ranges())
	b.retired = append(b.retired, &committed{intentKey: ikey, last: seqs.Last(), set: seqs})
}

// acked forgets a committed sequence whose message came back and was acked
// again.
func (b *seqBook) acked(seq uint64) { b.committed.Remove(progress.Range{First: seq, Last: seq}) }

// retire records a stored batch whose acks were confirmed, with its
// sequences (progress.Seqs.MarshalJSON) for expand. Its intent is kept until the
// ack floor passes the batch: a consumer reset after a crash replays acked
// messages above the floor, and the intent is what tells recovery they are
// stored.
func (b *seqBook) retire(ikey string, first, last uint64, seqs []byte) {
	b.retired = append(b.retired, &committed{intentKey: ikey, first: first, last: last, seqs: seqs})
}

// expand makes the sequences of every confirmed batch whose range holds seq
// committed, so that a message coming back after its ack was lost is acked
// again, not written again.
func (b *seqBook) expand(seq uint64) {
	for _, c := range b.retired {
		if len(c.seqs) == 0 || seq < c.first || seq > c.last {
			continue
		}
		var set progress.Seqs
		if err := set.UnmarshalJSON(c.seqs); err == nil {
			b.committed.AddAll(set.Ranges())
			c.set = set
		}
		c.seqs = nil
	}
}

// await records an intent whose object is missing: its messages wait
// until deadline, when the store is asked again.
func (b *seqBook) await(ikey string, in *intent, deadline time.Time) {
	u := &unresolved{key: ikey, in: in, deadline: deadline}
	if b.unresolved == nil {
		b.unresolved = map[string]*unresolved{}
	}
	b.unresolved[ikey] = u
	b.pending.AddAll(in.Seqs.Ranges())
}

// due yields the unresolved intents whose deadline has passed at now, by
// intent key.
func (b *seqBook) due(now time.Time) iter.Seq2[string, *unresolved] {
	return func(yield func(string, *unresolved) bool) {
		for ikey, u := range b.unresolved {
			if !now.Before(u.deadline) && !yield(ikey, u) {
				return
			}
		}
	}
}

// resolve forgets an unresolved intent, its object found or known never to
// come, and returns the deliveries of its messages that waited, to be
// handled anew.
func (b *seqBook) resolve(ikey string) map[uint64]delivery {
	u, ok := b.unresolved[ikey]
	if !ok {
		return nil
	}
	delete(b.unresolved, ikey)
	// Rebuilt from the intents left: two may name one sequence.
	b.pending = progress.Set{}
	for _, o := range b.unresolved {
		b.pending.AddAll(o.in.Seqs.Ranges())
	}
	return u.waiting
}

// passFloor forgets the stored batches the recorded floor has passed:
// every message of them was acked and no reset can replay them. It returns
// the intent keys that are no longer needed.
func (b *seqBook) passFloor(floor uint64) []string {
	var forget []string
	b.retired = slices.DeleteFunc(b.retired, func(c *committed) bool {
		if c.last <= floor {
			b.committed.RemoveAll(c.set.Ranges())
			forget = append(forget, c.intentKey)
			return true
		}
		return false
	})
	return forget
}

// known returns the intent keys the book accounts for: this process's own
// batches in flight, unresolved intents, and stored batches above the ack
// floor. Recovery leaves them alone.
func (b *seqBook) known() map[string]bool {
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

// reset forgets what an earlier recovery found, before recovery runs again
// while the stream is set up.
func (b *seqBook) reset() {
	b.committed = progress.Set{}
	clear(b.unresolved)
	b.pending = progress.Set{}
	b.retired = nil
}
