// Package buffer groups messages into batches, one per buffer key, and
// decides when a batch is sealed: when it reaches its size, count or age
// limit, when its group moves to another directory, or when the caller asks
// for memory or MaxAckPending pressure.
//
// The package is pure: it does no I/O, starts no goroutines and reads no
// clock; time is an argument. Records are encoded as they are added (through
// a formats.Batch), so size limits apply to the bytes that will be written.
package buffer

import (
	"fmt"
	"time"

	"github.com/jetlake/jetlake/formats"
)

// Reason says why a batch was sealed.
type Reason string

// The reasons a batch is sealed.
const (
	ReasonSize     Reason = "size"     // the next record would exceed MaxBytes
	ReasonCount    Reason = "count"    // MaxMessages records
	ReasonAge      Reason = "age"      // the first record is MaxAge old
	ReasonPath     Reason = "path"     // the group moved to another directory
	ReasonMemory   Reason = "memory"   // the caller is over its memory budget
	ReasonPending  Reason = "pending"  // the caller nears the consumer's MaxAckPending
	ReasonShutdown Reason = "shutdown" // the caller is stopping or idle
)

// Limits bound one batch. A zero field means no limit.
type Limits struct {
	MaxBytes    int           // encoded size; a single larger record gets a batch of its own
	MaxMessages int           // records per batch
	MaxAge      time.Duration // from when the batch's first record was added
}

// Item is one message of a batch: its stream sequence and the caller's handle
// for it (for acks).
type Item[H any] struct {
	Seq    uint64
	Handle H
}

// Batch is the content of one future object.
type Batch[H any] struct {
	Group  string // what the batch is grouped by (e.g. stream and subject)
	Dir    string // rendered directory of every record in the batch
	Body   formats.Batch
	Items  []Item[H] // in the order added
	First  uint64    // lowest sequence
	Last   uint64    // highest sequence
	Opened time.Time // when the first record was added
	Newest time.Time // latest record timestamp (Record.Time) in the batch
	Reason Reason    // why the batch was sealed; empty while open
}

// Len is the number of messages in the batch.
func (b *Batch[H]) Len() int { return len(b.Items) }

// Size is the encoded size of the batch in bytes.
func (b *Batch[H]) Size() int { return b.Body.Size() }

// Set holds the open batches of one exporter and the batches sealed since the
// last call to TakeSealed. A Set is not safe for concurrent use.
type Set[H any] struct {
	enc    formats.Encoder
	limits Limits

	open   map[string]*Batch[H] // by Group: a group has one open batch
	sealed []*Batch[H]
	taken  []*Batch[H] // what TakeSealed returned last
	free   []*Batch[H]
	bytes  int64 // encoded bytes of open batches
	mem    int64 // memory held by open batches
	msgs   int   // messages in open batches
}

// New returns an empty Set that encodes records with enc.
func New[H any](enc formats.Encoder, limits Limits) *Set[H] {
	return &Set[H]{
		enc:    enc,
		limits: limits,
		open:   make(map[string]*Batch[H]),
	}
}

// Add encodes rec into the open batch of group, opening one if needed, and
// records h under rec.Sequence. A group has one open batch, in one
// directory; adding may seal batches: the group's batch when dir differs
// from its directory (ReasonPath), the batch when rec would push it past
// MaxBytes (ReasonSize, and rec starts a new batch), and the batch when it
// reaches MaxMessages (ReasonCount). group and dir are copied only when a
// batch is opened, so adding to an open batch does not allocate.
//
// An error means rec can never be encoded; nothing was added or sealed then.
func (s *Set[H]) Add(group, dir []byte, rec *formats.Record, h H, now time.Time) error {
	b := s.open[string(group)]
	if b != nil && b.Dir != string(dir) {
		s.seal(b, ReasonPath)
		b = nil
	}
	if b == nil {
		b = s.openBatch(string(group), string(dir), now)
	}
	before, beforeMem := b.Body.Size(), b.Body.MemSize()
	if err := b.Body.Append(rec); err != nil {
		if b.Len() == 0 {
			s.discard(b)
		}
		return fmt.Errorf("buffer: encode sequence %d: %w", rec.Sequence, err)
	}
	if s.limits.MaxBytes > 0 && b.Len() > 0 && b.Body.Size() > s.limits.MaxBytes {
		// The record does not fit: seal what is there and start anew with it.
		b.Body.DropLast()
		s.seal(b, ReasonSize)
		b = s.openBatch(b.Group, b.Dir, now)
		before, beforeMem = b.Body.Size(), b.Body.MemSize()
		if err := b.Body.Append(rec); err != nil {
			s.discard(b)
			return fmt.Errorf("buffer: encode sequence %d: %w", rec.Sequence, err)
		}
	}
	s.bytes += int64(b.Body.Size() - before)
	s.mem += int64(b.Body.MemSize() - beforeMem)
	s.msgs++
	b.Items = append(b.Items, Item[H]{Seq: rec.Sequence, Handle: h})
	if len(b.Items) == 1 || rec.Sequence < b.First {
		b.First = rec.Sequence
	}
	if rec.Sequence > b.Last {
		b.Last = rec.Sequence
	}
	if rec.Time.After(b.Newest) {
		b.Newest = rec.Time
	}
	if s.limits.MaxMessages > 0 && len(b.Items) >= s.limits.MaxMessages ||
		s.limits.MaxBytes > 0 && b.Body.Size() >= s.limits.MaxBytes {
		s.seal(b, reasonFull(b, s.limits))
	}
	return nil
}

func reasonFull[H any](b *Batch[H], l Limits) Reason {
	if l.MaxMessages > 0 && len(b.Items) >= l.MaxMessages {
		return ReasonCount
	}
	return ReasonSize
}

func (s *Set[H]) openBatch(group, dir string, now time.Time) *Batch[H] {
	var b *Batch[H]
	if n := len(s.free); n > 0 {
		b = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		b = &Batch[H]{Body: s.enc.NewBatch()}
	}
	b.Group, b.Dir, b.Opened = group, dir, now
	s.open[group] = b
	s.bytes += int64(b.Body.Size())
	s.mem += int64(b.Body.MemSize())
	return b
}

// discard closes an empty batch without sealing it.
func (s *Set[H]) discard(b *Batch[H]) {
	s.bytes -= int64(b.Body.Size())
	s.mem -= int64(b.Body.MemSize())
	delete(s.open, b.Group)
	s.Release(b)
}

func (s *Set[H]) seal(b *Batch[H], r Reason) {
	s.bytes -= int64(b.Body.Size())
	s.mem -= int64(b.Body.MemSize())
	s.msgs -= len(b.Items)
	delete(s.open, b.Group)
	b.Reason = r
	s.sealed = append(s.sealed, b)
}

// Expire seals every open batch whose first record is MaxAge old at now.
func (s *Set[H]) Expire(now time.Time) {
	if s.limits.MaxAge <= 0 {
		return
	}
	for _, b := range s.open {
		if now.Sub(b.Opened) >= s.limits.MaxAge {
			s.seal(b, ReasonAge)
		}
	}
}

// NextExpiry returns when the oldest open batch reaches MaxAge; ok is false
// when no batch is open or there is no age limit.
func (s *Set[H]) NextExpiry() (t time.Time, ok bool) {
	if s.limits.MaxAge <= 0 {
		return time.Time{}, false
	}
	for _, b := range s.open {
		if !ok || b.Opened.Before(t) {
			t, ok = b.Opened, true
		}
	}
	return t.Add(s.limits.MaxAge), ok
}

// SealLargest seals the open batch holding the most memory, the largest
// then the oldest among equals, for reason r. It reports whether a batch was open.
func (s *Set[H]) SealLargest(r Reason) bool {
	return s.sealBest(r, func(a, b *Batch[H]) bool {
		if am, bm := a.Body.MemSize(), b.Body.MemSize(); am != bm {
			return am > bm
		}
		// Memory comes in chunks: among equals, the fullest frees most.
		if as, bs := a.Body.Size(), b.Body.Size(); as != bs {
			return as > bs
		}
		return a.Opened.Before(b.Opened)
	})
}

// SealMost seals the open batch holding the most messages whose group the
// match function accepts (nil accepts all), for reason r. It reports whether
// such a batch was open.
func (s *Set[H]) SealMost(r Reason, match func(group string) bool) bool {
	var best *Batch[H]
	for _, b := range s.open {
		if match != nil && !match(b.Group) {
			continue
		}
		if best == nil || b.Len() > best.Len() || b.Len() == best.Len() && b.Opened.Before(best.Opened) {
			best = b
		}
	}
	if best == nil {
		return false
	}
	s.seal(best, r)
	return true
}

func (s *Set[H]) sealBest(r Reason, better func(a, b *Batch[H]) bool) bool {
	var best *Batch[H]
	for _, b := range s.open {
		if best == nil || better(b, best) {
			best = b
		}
	}
	if best == nil {
		return false
	}
	s.seal(best, r)
	return true
}

// SealAll seals every open batch for reason r.
func (s *Set[H]) SealAll(r Reason) {
	for _, b := range s.open {
		s.seal(b, r)
	}
}

// TakeSealed returns the batches sealed since the last call, in the order
// they were sealed, and forgets them. The caller owns the batches until it
// passes them to Release; the returned slice itself is only valid until the
// next call to a method of s.
func (s *Set[H]) TakeSealed() []*Batch[H] {
	// Two arrays take turns, and the one returned last time is cleared:
	// the set must not keep the batches alive once the caller is done.
	out := s.sealed
	clear(s.taken)
	s.sealed, s.taken = s.taken[:0], out
	return out
}

// maxFree bounds how many released batches are kept for reuse; their memory
// is outside every budget, so the pool stays small.
const maxFree = 4

// Release returns a batch the caller is done with, so its memory can be
// reused.
func (s *Set[H]) Release(b *Batch[H]) {
	// Reset hands the body's memory back for reuse even when the batch
	// itself is not kept.
	b.Body.Reset()
	if len(s.free) >= maxFree {
		return
	}
	clear(b.Items)
	b.Items = b.Items[:0]
	b.Group, b.Dir, b.Reason = "", "", ""
	b.First, b.Last, b.Opened, b.Newest = 0, 0, time.Time{}, time.Time{}
	s.free = append(s.free, b)
}

// Bytes is the encoded size of all open batches.
func (s *Set[H]) Bytes() int64 { return s.bytes }

// Mem is the memory all open batches hold: more than Bytes for compressed
// and columnar formats, which keep records in another form until Finish.
func (s *Set[H]) Mem() int64 { return s.mem }

// Messages is the number of messages in open batches.
func (s *Set[H]) Messages() int { return s.msgs }

// Open is the number of open batches.
func (s *Set[H]) Open() int { return len(s.open) }
