package restore

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
)

// selection is what of a stream a restore takes: a sequence range, a time
// range of the messages' stream timestamps and subject filters.
type selection struct {
	seqs     progress.Range
	since    time.Time // zero: no bound
	until    time.Time // zero: no bound; exclusive
	subjects []string  // none: every subject
}

// takes reports whether r is selected.
func (s *selection) takes(r *formats.Record) bool {
	if r.Sequence < s.seqs.First || r.Sequence > s.seqs.Last {
		return false
	}
	if !s.since.IsZero() && r.Time.Before(s.since) || !s.until.IsZero() && !r.Time.Before(s.until) {
		return false
	}
	return len(s.subjects) == 0 || slices.ContainsFunc(s.subjects, func(f string) bool { return config.SubjectMatches(f, r.Subject) })
}

// source reads the selected records of a catalog's data objects in stream
// sequence order, without holding any object whole.
//
// Each object is read as runs of records in sequence order: one run for an
// object whose metadata says its records are ordered, else the runs a
// first pass over its records finds (a redelivery puts a record out of
// order). Each run is a cursor: a goroutine that streams the object's
// records of the run, the selected ones, into a small buffer. The cursors
// are merged by sequence; an object's cursors start once the merge reaches
// its first sequence, and those of the next few objects start ahead, so
// that decoding runs beside publishing. Memory is bounded by the cursors
// open (those of the objects whose ranges overlap where the merge stands,
// and those ahead), each holding cursorBuffer records and its decoder.
type source struct {
	ctx     context.Context
	store   objstore.ObjectReader
	sel     selection
	objects []lake.CatalogObject // those that may hold selected sequences, by First
	ahead   int                  // objects whose cursors start ahead of the merge
	started []*objectCursors     // by object; nil until started
	next    int                  // the next object the merge takes in
	open    cursors
	last    uint64 // the last sequence returned
	// duplicates counts records of a sequence returned already: two
	// objects that hold the same sequence (verify reports them).
	duplicates int
	bytesRead  atomic.Int64
	cancel     context.CancelFunc
	mem        *budget
}

func newSource(ctx context.Context, store objstore.ObjectReader, objects []lake.CatalogObject, sel selection, readers int, maxMemory int64) *source {
	var in []lake.CatalogObject
	for _, o := range objects {
		if o.Holds(sel.seqs) {
			in = append(in, o)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	mem := newBudget(maxMemory)
	context.AfterFunc(ctx, mem.wake)
	return &source{ctx: ctx, store: store, sel: sel, objects: in, ahead: max(readers, 1),
		started: make([]*objectCursors, len(in)), cancel: cancel, mem: mem}
}

// Close stops the cursors still reading.
func (s *source) Close() { s.cancel() }

// budget bounds the bytes of the records the cursors read ahead of the
// merge. A cursor the merge waits on reads on whatever the budget says, or
// the merge could wait for ever on records the budget holds back: so the
// records held are at most the budget plus one a cursor. Safe for
// concurrent use.
type budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	used  int64
	peak  int64 // the most used
	limit int64 // 0: no bound
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// take waits until n bytes fit, needed reports that the merge waits on
// the caller, or ctx ends.
func (b *budget) take(ctx context.Context, n int64, needed func() bool) {
	if b.limit == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.limit && !needed() && ctx.Err() == nil {
		b.cond.Wait()
	}
	b.used += n
	b.peak = max(b.peak, b.used)
}

// give returns n bytes taken.
func (b *budget) give(n int64) {
	if b.limit == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// wake has the cursors waiting look again: the merge took a record, or
// the read ends.
func (b *budget) wake() {
	if b.limit == 0 {
		return
	}
	// Under the lock: a waiter between its check and its Wait is woken.
	b.mu.Lock()
	b.cond.Broadcast()
	b.mu.Unlock()
}

// recordSize is what a record holds in memory, for the budget.
func recordSize(r *formats.Record) int64 {
	n := int64(len(r.Data)+len(r.Subject)+len(r.Stream)) + 128
	for k, vs := range r.Headers {
		n += int64(len(k)) + 16
		for _, v := range vs {
			n += int64(len(v)) + 16
		}
	}
	return n
}

// Next returns the next selected record, or nil at the end. The record is
// the caller's.
func (s *source) Next() (*formats.Record, error) {
	for {
		for s.next < len(s.objects) && (len(s.open) == 0 || s.objects[s.next].First <= s.open.min()) {
			if err := s.take(s.next); err != nil {
				return nil, err
			}
			s.next++
		}
		if len(s.open) == 0 {
			return nil, nil
		}
		r, err := s.open.pop(s.mem)
		if err != nil {
			return nil, err
		}
		s.mem.give(recordSize(r))
		if r.Sequence == s.last && s.last != 0 {
			s.duplicates++
			continue
		}
		s.last = r.Sequence
		return r, nil
	}
}

// take adds object i's cursors to the merge, and starts those of the
// objects after it, up to ahead.
func (s *source) take(i int) error {
	for j := i; j < min(i+1+s.ahead, len(s.objects)); j++ {
		if s.started[j] == nil {
			s.started[j] = s.start(s.objects[j])
		}
	}
	oc := s.started[i]
	s.started[i] = nil
	cs, err := oc.wait()
	if err != nil {
		return err
	}
	for _, c := range cs {
		ok, err := c.advance(s.mem)
		if err != nil {
			return err
		}
		if ok {
			heap.Push(&s.open, c)
		}
	}
	return nil
}

// objectCursors are the cursors of one object, once its runs are known.
type objectCursors struct {
	done    chan struct{}
	cursors []*cursor
	err     error
}

func (oc *objectCursors) wait() ([]*cursor, error) {
	<-oc.done
	return oc.cursors, oc.err
}

// start finds the runs of o (beside the caller) and starts a cursor for
// each.
func (s *source) start(o lake.CatalogObject) *objectCursors {
	oc := &objectCursors{done: make(chan struct{})}
	go func() {
		defer close(oc.done)
		runs := []run{{start: 0, count: -1}}
		if !o.Ordered {
			var err error
			if runs, err = s.runs(o); err != nil {
				oc.err = err
				return
			}
		}
		for _, r := range runs {
			oc.cursors = append(oc.cursors, s.cursor(o, r))
		}
	}()
	return oc
}

// run is a stretch of an object's records in sequence order: count
// records from the start-th (from 0); count -1 runs to the end.
type run struct {
	start, count int
}

// errEnough stops a read that has what it wants.
var errEnough = errors.New("enough")

// runs reads o's records once and returns its runs in sequence order.
func (s *source) runs(o lake.CatalogObject) ([]run, error) {
	var runs []run
	var prev uint64
	i := 0
	err := s.read(o, func(r *formats.Record) error {
		if i == 0 || r.Sequence <= prev {
			if len(runs) > 0 {
				runs[len(runs)-1].count = i - runs[len(runs)-1].start
			}
			runs = append(runs, run{start: i, count: -1})
		}
		prev = r.Sequence
		i++
		return nil
	})
	return runs, err
}

// read streams o's records to fn.
func (s *source) read(o lake.CatalogObject, fn func(*formats.Record) error) error {
	var ra io.ReaderAt
	var size int64
	if op, ok := s.store.(interface {
		Open(context.Context, string) (*objstore.Opened, error)
	}); ok {
		obj, err := op.Open(s.ctx, o.Key)
		if err != nil {
			return fmt.Errorf("read %s: %w", o.Key, err)
		}
		defer obj.Close()
		ra, size = obj, obj.Size()
	} else {
		body, err := s.store.Get(s.ctx, o.Key)
		if err != nil {
			return fmt.Errorf("read %s: %w", o.Key, err)
		}
		ra, size = bytes.NewReader(body), int64(len(body))
	}
	s.bytesRead.Add(size)
	err := formats.ReadRecords(o.Key, ra, size, fn)
	if err != nil && !errors.Is(err, errEnough) {
		return fmt.Errorf("read %s: %w", o.Key, err)
	}
	return nil
}

// cursorBuffer is how many records a cursor reads ahead of the merge.
const cursorBuffer = 64

// cursor is one run of an object's selected records not merged yet.
type cursor struct {
	ch      chan item
	head    *formats.Record
	waiting atomic.Bool // the merge waits for the next record
}

// item is a record, or the error that ended a cursor's read.
type item struct {
	rec *formats.Record
	err error
}

// cursor starts streaming run r of o's selected records.
func (s *source) cursor(o lake.CatalogObject, r run) *cursor {
	c := &cursor{ch: make(chan item, cursorBuffer)}
	go func() {
		defer close(c.ch)
		i := 0
		var prev uint64
		err := s.read(o, func(rec *formats.Record) error {
			defer func() { i++ }()
			switch {
			case i < r.start:
				return nil
			case r.count >= 0 && i >= r.start+r.count:
				return errEnough
			case i > r.start && rec.Sequence <= prev:
				// Read back, not trusted: the metadata said ordered.
				return fmt.Errorf("record %d holds sequence %d after %d, though the object's metadata says its records are in sequence order", i+1, rec.Sequence, prev)
			}
			prev = rec.Sequence
			if !s.sel.takes(rec) {
				return nil
			}
			cp := *rec
			cp.Data = bytes.Clone(rec.Data)
			if rec.Headers != nil {
				cp.Headers = maps.Clone(rec.Headers)
				for k, v := range cp.Headers {
					cp.Headers[k] = slices.Clone(v)
				}
			}
			// Past the bound only for the one record the merge waits on.
			s.mem.take(s.ctx, recordSize(&cp), func() bool { return c.waiting.CompareAndSwap(true, false) })
			select {
			case c.ch <- item{rec: &cp}:
				return nil
			case <-s.ctx.Done():
				return s.ctx.Err()
			}
		})
		if err != nil && s.ctx.Err() == nil {
			c.ch <- item{err: err}
		}
	}()
	return c
}

// advance takes the cursor's next record as its head; false at its end.
// The cursor may then read on: mem is told.
func (c *cursor) advance(mem *budget) (bool, error) {
	c.waiting.Store(true)
	mem.wake()
	it, ok := <-c.ch
	c.waiting.Store(false)
	switch {
	case !ok:
		c.head = nil
		return false, nil
	case it.err != nil:
		return false, it.err
	}
	c.head = it.rec
	return true, nil
}

// cursors is a min-heap of cursors by the sequence of their head.
type cursors []*cursor

func (h cursors) Len() int           { return len(h) }
func (h cursors) Less(i, j int) bool { return h[i].head.Sequence < h[j].head.Sequence }
func (h cursors) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// min is the sequence of the next record of the merge.
func (h cursors) min() uint64 { return h[0].head.Sequence }

// pop takes the next record of the merge.
func (h *cursors) pop(mem *budget) (*formats.Record, error) {
	c := (*h)[0]
	r := c.head
	ok, err := c.advance(mem)
	if err != nil {
		return nil, err
	}
	if ok {
		heap.Fix(h, 0)
	} else {
		heap.Pop(h)
	}
	return r, nil
}
