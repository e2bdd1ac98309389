// Package buffer groups messages into batches, one per buffer key, and
// decides when a batch is sealed: when it reaches its size, count or age
// limit, when its group moves to another directory, or when the caller asks
// for memory or MaxAckPending pressure.
//
// The package is pure: it does no I/O, starts no goroutines and reads no
// clock; time is an argument. It knows no format: records are encoded as
// they are added, by a Body the caller supplies (a formats.Batch, say), so
// size limits apply to the bytes that will be written.
package buffer

import (
	"fmt"
	"slices"
	"time"
	"unsafe"
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
	ReasonHandover Reason = "handover" // the caller hands the group's source over to another
)

// Limits bound one batch. A zero field means no limit.
type Limits struct {
	MaxBytes    int           // encoded size; a single larger record gets a batch of its own
	MaxMessages int           // records per batch
	MaxAge      time.Duration // from when the batch's first record was added
	// Overhead is the memory each batch holds beyond its body's MemSize
	// and the Set's own bookkeeping, such as the body's struct. With many
	// small batches it is most of the memory they take.
	Overhead int
}

// Item is one message of a batch: its stream sequence and the caller's handle
// for it (for acks).
type Item[H any] struct {
	Seq    uint64
	Handle H
}

// Sized is what a Batch needs of its body.
type Sized interface {
	// Size is the size in bytes the encoded records will have.
	Size() int
}

// Body holds the records of R of one batch, encoded as they are added:
// formats.Batch is one, for formats.Record. It is what a Set needs of it.
type Body[R any] interface {
	Sized

	// Append encodes rec at the end; an error means it can never be
	// encoded, and the body is unchanged.
	Append(rec *R) error
	// MemSize is the memory the body holds.
	MemSize() int
	// DropLast removes the record appended last, once after an Append
	// that succeeded; Size and MemSize return what they did before it.
	DropLast()
	// Reset empties the body for reuse.
	Reset()
}

// Batch is the content of one future object: its records, encoded in Body
// of type B, and the messages they came from.
type Batch[H any, B Sized] struct {
	Group  string    // what the batch is grouped by (e.g. stream and subject)
	Dir    string    // rendered directory of every record in the batch
	Body   B         // the encoded records
	Items  []Item[H] // in the order added
	First  uint64    // lowest sequence
	Last   uint64    // highest sequence
	Opened time.Time // when the first record was added
	Newest time.Time // latest record timestamp in the batch
	Reason Reason    // why the batch was sealed; empty while open

	overhead int // see Overhead
}

// Overhead is the memory the batch holds beyond its body's: its own struct,
// its group and directory, its items and the Set's map entry, and
// Limits.Overhead. At many subjects of few messages each it is most of the
// memory a batch takes, so it is counted with the body's.
func (b *Batch[H, B]) Overhead() int { return b.overhead }

// mapEntry is about what an entry of the map of open batches takes.
const mapEntry = 48

// countOverhead sets b.overhead from what b holds now.
func (b *Batch[H, B]) countOverhead(extra int) {
	b.overhead = int(unsafe.Sizeof(*b)) + len(b.Group) + len(b.Dir) + mapEntry +
		cap(b.Items)*int(unsafe.Sizeof(Item[H]{})) + extra
}

// Len is the number of messages in the batch.
func (b *Batch[H, B]) Len() int { return len(b.Items) }

// Size is the encoded size of the batch in bytes.
func (b *Batch[H, B]) Size() int { return b.Body.Size() }

// Set holds the open batches of one exporter and the batches sealed since the
// last call to TakeSealed: batches of messages with handles of type H, whose
// records of type R are encoded in bodies of type B. A Set is not safe for
// concurrent use.
type Set[H, R any, B Body[R]] struct {
	newBody func() B
	limits  Limits

	open    map[string]*Batch[H, B] // by Group: a group has one open batch
	sealed  []*Batch[H, B]
	taken   []*Batch[H, B] // what TakeSealed returned last
	scratch []*Batch[H, B] // for SealLargestUntil
	free    []*Batch[H, B]
	bytes   int64 // encoded bytes of open batches
	mem     int64 // memory held by open batches
	msgs    int   // messages in open batches
}

// New returns an empty Set whose batches encode their records in bodies
// that newBody makes, such as a formats.Encoder's NewBatch. Bodies are
// reused after Release.
func New[H, R any, B Body[R]](newBody func() B, limits Limits) *Set[H, R, B] {
	return &Set[H, R, B]{
		newBody: newBody,
		limits:  limits,
		open:    make(map[string]*Batch[H, B]),
	}
}

// Add encodes rec into the open batch of group, opening one if needed, and
// records h under seq, rec's stream sequence; ts is rec's timestamp, for
// Batch.Newest, and now the time it is added. A group has one open batch, in one
// directory; adding may seal batches: the group's batch when dir differs
// from its directory (ReasonPath), the batch when rec would push it past
// MaxBytes (ReasonSize, and rec starts a new batch), and the batch when it
// reaches MaxMessages (ReasonCount). group and dir are copied only when a
// batch is opened, so adding to an open batch does not allocate.
//
// An error means rec can never be encoded; nothing was added or sealed then.
func (s *Set[H, R, B]) Add(group, dir []byte, rec *R, seq uint64, ts time.Time, h H, now time.Time) error {
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
		return fmt.Errorf("buffer: encode sequence %d: %w", seq, err)
	}
	if s.limits.MaxBytes > 0 && b.Len() > 0 && b.Body.Size() > s.limits.MaxBytes {
		// The record does not fit: seal what is there and start anew with it.
		b.Body.DropLast()
		s.seal(b, ReasonSize)
		b = s.openBatch(b.Group, b.Dir, now)
		before, beforeMem = b.Body.Size(), b.Body.MemSize()
		if err := b.Body.Append(rec); err != nil {
			s.discard(b)
			return fmt.Errorf("buffer: encode sequence %d: %w", seq, err)
		}
	}
	s.bytes += int64(b.Body.Size() - before)
	s.mem += int64(b.Body.MemSize() - beforeMem)
	s.msgs++
	if len(b.Items) == cap(b.Items) {
		before := b.overhead
		b.Items = append(b.Items, Item[H]{Seq: seq, Handle: h})
		b.countOverhead(s.limits.Overhead)
		s.mem += int64(b.overhead - before)
	} else {
		b.Items = append(b.Items, Item[H]{Seq: seq, Handle: h})
	}
	if len(b.Items) == 1 || seq < b.First {
		b.First = seq
	}
	if seq > b.Last {
		b.Last = seq
	}
	if ts.After(b.Newest) {
		b.Newest = ts
	}
	if s.limits.MaxMessages > 0 && len(b.Items) >= s.limits.MaxMessages ||
		s.limits.MaxBytes > 0 && b.Body.Size() >= s.limits.MaxBytes {
		s.seal(b, reasonFull(len(b.Items), s.limits))
	}
	return nil
}

func reasonFull(n int, l Limits) Reason {
	if l.MaxMessages > 0 && n >= l.MaxMessages {
		return ReasonCount
	}
	return ReasonSize
}

func (s *Set[H, R, B]) openBatch(group, dir string, now time.Time) *Batch[H, B] {
	var b *Batch[H, B]
	if n := len(s.free); n > 0 {
		b = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		b = &Batch[H, B]{Body: s.newBody()}
	}
	b.Group, b.Dir, b.Opened = group, dir, now
	b.countOverhead(s.limits.Overhead)
	s.open[group] = b
	s.bytes += int64(b.Body.Size())
	s.mem += int64(b.Body.MemSize() + b.overhead)
	return b
}

// discard closes an empty batch without sealing it.
func (s *Set[H, R, B]) discard(b *Batch[H, B]) {
	s.bytes -= int64(b.Body.Size())
	s.mem -= int64(b.Body.MemSize() + b.overhead)
	delete(s.open, b.Group)
	s.Release(b)
}

func (s *Set[H, R, B]) seal(b *Batch[H, B], r Reason) {
	s.bytes -= int64(b.Body.Size())
	s.mem -= int64(b.Body.MemSize() + b.overhead)
	s.msgs -= len(b.Items)
	delete(s.open, b.Group)
	b.Reason = r
	s.sealed = append(s.sealed, b)
}

// Expire seals every open batch whose first record is MaxAge old at now.
func (s *Set[H, R, B]) Expire(now time.Time) {
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
func (s *Set[H, R, B]) NextExpiry() (t time.Time, ok bool) {
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

// SealLargestUntil seals open batches for reason r, those holding the most
// memory first (the fullest, then the oldest, among equals), until those it
// sealed hold at least free bytes of memory (Mem) or none is left, and
// returns how many it sealed; with free 0, that is the largest alone. One pass over the
// open batches serves all those seals: with many small batches, sealing
// them one at a time would cost a pass each.
func (s *Set[H, R, B]) SealLargestUntil(r Reason, free int64) int {
	s.scratch = s.scratch[:0]
	for _, b := range s.open {
		s.scratch = append(s.scratch, b)
	}
	slices.SortFunc(s.scratch, func(a, b *Batch[H, B]) int {
		switch {
		case s.larger(a, b):
			return -1
		case s.larger(b, a):
			return 1
		}
		return 0
	})
	n := 0
	var freed int64
	for _, b := range s.scratch {
		if n > 0 && freed >= free {
			break
		}
		freed += int64(b.Body.MemSize() + b.overhead)
		s.seal(b, r)
		n++
	}
	clear(s.scratch)
	return n
}

// larger reports whether sealing a frees more memory than sealing b.
func (s *Set[H, R, B]) larger(a, b *Batch[H, B]) bool {
	if am, bm := a.Body.MemSize(), b.Body.MemSize(); am != bm {
		return am > bm
	}
	// Memory comes in chunks: among equals, the fullest frees most.
	if as, bs := a.Body.Size(), b.Body.Size(); as != bs {
		return as > bs
	}
	return a.Opened.Before(b.Opened)
}

// SealMost seals the open batch holding the most messages whose group the
// match function accepts (nil accepts all), for reason r. It reports whether
// such a batch was open.
func (s *Set[H, R, B]) SealMost(r Reason, match func(group string) bool) bool {
	var best *Batch[H, B]
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

// SealAll seals every open batch for reason r.
func (s *Set[H, R, B]) SealAll(r Reason) {
	for _, b := range s.open {
		s.seal(b, r)
	}
}

// SealWhere seals every open batch whose group match accepts and returns
// how many it sealed.
func (s *Set[H, R, B]) SealWhere(r Reason, match func(group string) bool) int {
	n := 0
	for _, b := range s.open {
		if match(b.Group) {
			s.seal(b, r)
			n++
		}
	}
	return n
}

// TakeSealed returns the batches sealed since the last call, in the order
// they were sealed, and forgets them. The caller owns the batches until it
// passes them to Release; the returned slice itself is only valid until the
// next call to a method of s.
func (s *Set[H, R, B]) TakeSealed() []*Batch[H, B] {
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
func (s *Set[H, R, B]) Release(b *Batch[H, B]) {
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
func (s *Set[H, R, B]) Bytes() int64 { return s.bytes }

// Mem is the memory all open batches hold, their Overhead included: more
// than Bytes for bodies that keep records in another form than the one they
// will be written in, such as compressed and columnar formats, and for many
// small batches.
func (s *Set[H, R, B]) Mem() int64 { return s.mem }

// Messages is the number of messages in open batches.
func (s *Set[H, R, B]) Messages() int { return s.msgs }

// Open is the number of open batches.
func (s *Set[H, R, B]) Open() int { return len(s.open) }
