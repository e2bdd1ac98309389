package restore

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/exporter/objstore"
	"github.com/jetlake/jetlake/exporter/progress"
	"github.com/jetlake/jetlake/formats"
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
// sequence order. Objects are fetched ahead, a few at a time, and merged:
// an object is read once the merge reaches its first sequence, so the
// records held are those of the objects whose ranges overlap there.
type source struct {
	sel     selection
	objects []lake.CatalogObject // those that may hold selected sequences, by First
	next    int                  // the next object to read
	fetch   *fetcher
	open    cursors
	last    uint64 // the last sequence returned
	// Duplicates counts records of a sequence returned already: two
	// objects that hold the same sequence (verify reports them).
	duplicates int
	bytesRead  int64
}

func newSource(ctx context.Context, store objstore.ObjectReader, objects []lake.CatalogObject, sel selection, readers int) *source {
	var in []lake.CatalogObject
	for _, o := range objects {
		if o.Holds(sel.seqs) {
			in = append(in, o)
		}
	}
	return &source{sel: sel, objects: in, fetch: startFetch(ctx, store, in, readers)}
}

// Next returns the next selected record, or nil at the end. The record is
// the caller's.
func (s *source) Next() (*formats.Record, error) {
	for {
		for s.next < len(s.objects) && (len(s.open) == 0 || s.objects[s.next].First <= s.open.min()) {
			if err := s.read(s.next); err != nil {
				return nil, err
			}
			s.next++
		}
		if len(s.open) == 0 {
			return nil, nil
		}
		r := s.open.pop()
		if r.Sequence == s.last && s.last != 0 {
			s.duplicates++
			continue
		}
		s.last = r.Sequence
		return r, nil
	}
}

// read reads object i's selected records, in sequence order, into the
// merge.
func (s *source) read(i int) error {
	o := s.objects[i]
	body, err := s.fetch.get(i)
	if err != nil {
		return fmt.Errorf("read %s: %w", o.Key, err)
	}
	s.bytesRead += int64(len(body))
	var recs []*formats.Record
	err = formats.ReadRecords(o.Key, bytes.NewReader(body), int64(len(body)), func(r *formats.Record) error {
		if !s.sel.takes(r) {
			return nil
		}
		c := *r
		c.Data = bytes.Clone(r.Data)
		c.Headers = maps.Clone(r.Headers)
		for k, v := range c.Headers {
			c.Headers[k] = slices.Clone(v)
		}
		recs = append(recs, &c)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", o.Key, err)
	}
	if len(recs) == 0 {
		return nil
	}
	slices.SortStableFunc(recs, func(a, b *formats.Record) int {
		switch {
		case a.Sequence < b.Sequence:
			return -1
		case a.Sequence > b.Sequence:
			return 1
		}
		return 0
	})
	heap.Push(&s.open, &cursor{recs: recs})
	return nil
}

// cursor is an object's records not merged yet.
type cursor struct {
	recs []*formats.Record
	at   int
}

// cursors is a min-heap of cursors by the sequence of their next record.
type cursors []*cursor

func (h cursors) Len() int { return len(h) }
func (h cursors) Less(i, j int) bool {
	return h[i].recs[h[i].at].Sequence < h[j].recs[h[j].at].Sequence
}
func (h cursors) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// min is the sequence of the next record of the merge.
func (h cursors) min() uint64 { return h[0].recs[h[0].at].Sequence }

// pop takes the next record of the merge.
func (h *cursors) pop() *formats.Record {
	c := (*h)[0]
	r := c.recs[c.at]
	c.recs[c.at] = nil
	c.at++
	if c.at == len(c.recs) {
		heap.Pop(h)
	} else {
		heap.Fix(h, 0)
	}
	return r
}

// fetcher gets objects' bodies ahead of the merge, at most n at a time
// and n held before the merge takes them.
type fetcher struct {
	results []chan fetched
	slots   chan struct{}
}

type fetched struct {
	body []byte
	err  error
}

func startFetch(ctx context.Context, store objstore.ObjectReader, objects []lake.CatalogObject, n int) *fetcher {
	f := &fetcher{results: make([]chan fetched, len(objects)), slots: make(chan struct{}, max(n, 1))}
	for i := range f.results {
		f.results[i] = make(chan fetched, 1)
	}
	go func() {
		for i, o := range objects {
			select {
			case f.slots <- struct{}{}:
			case <-ctx.Done():
				for _, ch := range f.results[i:] {
					ch <- fetched{err: ctx.Err()}
				}
				return
			}
			go func() {
				body, err := store.Get(ctx, o.Key)
				f.results[i] <- fetched{body, err}
			}()
		}
	}()
	return f
}

// get waits for object i's body, and frees its slot.
func (f *fetcher) get(i int) ([]byte, error) {
	r := <-f.results[i]
	select {
	case <-f.slots:
	default: // none taken: the fetch ended with its context
	}
	return r.body, r.err
}
