package restore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
)

// memObjects is an objstore.ObjectReader over bodies in memory.
type memObjects map[string][]byte

func (m memObjects) List(context.Context, string, func(string, map[string]string) error) error {
	return nil
}

func (m memObjects) Get(_ context.Context, key string) ([]byte, error) {
	b, ok := m[key]
	if !ok {
		return nil, objstore.ErrNotFound
	}
	return b, nil
}

func (m memObjects) Head(context.Context, string) (map[string]string, error) { return nil, nil }

// object encodes records of seqs, in that order, as JSON lines.
func object(t *testing.T, seqs ...uint64) []byte {
	t.Helper()
	enc, err := formats.New(formats.Options{Format: formats.JSONLines, Metadata: true})
	if err != nil {
		t.Fatal(err)
	}
	b := enc.NewBatch()
	for _, q := range seqs {
		if err := b.Append(&formats.Record{Stream: "S", Subject: fmt.Sprintf("s.%d", q%3), Sequence: q, Time: time.Unix(int64(q), 0), Data: fmt.Appendf(nil, `{"q":%d}`, q)}); err != nil {
			t.Fatal(err)
		}
	}
	body, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if _, err := body.WriteTo(&sb); err != nil {
		t.Fatal(err)
	}
	return []byte(sb.String())
}

// drain reads a source to its end.
func drain(s *source) ([]uint64, error) {
	defer s.Close()
	var out []uint64
	for {
		r, err := s.Next()
		if err != nil || r == nil {
			return out, err
		}
		if string(r.Data) != fmt.Sprintf(`{"q":%d}`, r.Sequence) {
			return out, fmt.Errorf("sequence %d carries %s", r.Sequence, r.Data)
		}
		out = append(out, r.Sequence)
	}
}

// Objects whose ranges overlap, one of them with records out of order (a
// redelivery), merge into stream sequence order; a sequence two objects
// hold is read once; the selection's range bounds what comes out.
func TestASourceMergesObjectsInSequenceOrder(t *testing.T) {
	store := memObjects{
		"a/00000000000000000001-00000000000000000009.jsonl": object(t, 1, 4, 7, 2, 9, 3), // out of order: three runs
		"b/00000000000000000005-00000000000000000012.jsonl": object(t, 5, 6, 8, 10, 12),
		"c/00000000000000000011-00000000000000000013.jsonl": object(t, 11, 12, 13), // 12 twice
	}
	objects := []lake.CatalogObject{
		{Key: "a/00000000000000000001-00000000000000000009.jsonl", First: 1, Last: 9},
		{Key: "b/00000000000000000005-00000000000000000012.jsonl", First: 5, Last: 12, Ordered: true},
		{Key: "c/00000000000000000011-00000000000000000013.jsonl", First: 11, Last: 13, Ordered: true},
	}
	for _, tc := range []struct {
		sel  progress.Range
		want []uint64
		dups int
	}{
		{progress.Range{First: 1, Last: 100}, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, 1},
		{progress.Range{First: 3, Last: 8}, []uint64{3, 4, 5, 6, 7, 8}, 0},
		{progress.Range{First: 13, Last: 13}, []uint64{13}, 0},
	} {
		for _, readers := range []int{1, 4} {
			s := newSource(context.Background(), store, objects, selection{seqs: tc.sel}, readers, 0)
			got, err := drain(s)
			if err != nil {
				t.Fatalf("%v, %d readers: %v", tc.sel, readers, err)
			}
			if !slices.Equal(got, tc.want) || s.duplicates != tc.dups {
				t.Fatalf("%v, %d readers: read %v (%d twice), want %v (%d twice)", tc.sel, readers, got, s.duplicates, tc.want, tc.dups)
			}
		}
	}
}

// An object whose metadata says its records are ordered, and they are
// not, stops the read with an error naming it: what is read back is
// checked, not trusted.
func TestASourceRefusesAnObjectOutOfTheOrderItsMetadataClaims(t *testing.T) {
	key := "a/00000000000000000001-00000000000000000003.jsonl"
	s := newSource(context.Background(), memObjects{key: object(t, 1, 3, 2)},
		[]lake.CatalogObject{{Key: key, First: 1, Last: 3, Ordered: true}}, selection{seqs: progress.Range{First: 1, Last: 10}}, 2, 0)
	_, err := drain(s)
	if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "sequence order") {
		t.Fatalf("read: %v; want an error naming %s and the order", err, key)
	}
}

// A source closed half way stops its cursors.
func TestASourceClosedEarlyStopsReading(t *testing.T) {
	var seqs []uint64
	for q := uint64(1); q <= 5000; q++ {
		seqs = append(seqs, q)
	}
	key := "a/00000000000000000001-00000000000000005000.jsonl"
	s := newSource(context.Background(), memObjects{key: object(t, seqs...)},
		[]lake.CatalogObject{{Key: key, First: 1, Last: 5000, Ordered: true}}, selection{seqs: progress.Range{First: 1, Last: 5000}}, 1, 0)
	if r, err := s.Next(); err != nil || r.Sequence != 1 {
		t.Fatalf("first record: %v, %v", r, err)
	}
	s.Close()
	if _, err := s.Next(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("after Close: %v", err)
	}
}

// The records read ahead of the merge stay within the memory bound, plus
// one record a cursor, however many objects overlap and however large they
// are; what comes out is the same.
func TestASourceKeepsTheRecordsReadAheadWithinItsBound(t *testing.T) {
	store := memObjects{}
	var objects []lake.CatalogObject
	const objectsN, per = 12, 150
	for o := range objectsN {
		// Object o holds the sequences congruent to o: all overlap.
		var seqs []uint64
		for i := range per {
			seqs = append(seqs, uint64(1+o+i*objectsN))
		}
		if o%3 == 0 { // out of order: runs
			seqs[10], seqs[20] = seqs[20], seqs[10]
		}
		key := fmt.Sprintf("o%d/%020d-%020d.jsonl", o, seqs[0], seqs[len(seqs)-1])
		store[key] = object(t, seqs...)
		objects = append(objects, lake.CatalogObject{Key: key, First: uint64(1 + o), Last: uint64(1 + o + (per-1)*objectsN), Ordered: o%3 != 0})
	}
	const limit = 4 << 10
	s := newSource(context.Background(), store, objects, selection{seqs: progress.Range{First: 1, Last: 1 << 20}}, 4, limit)
	got, err := drain(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != objectsN*per || !slices.IsSorted(got) {
		t.Fatalf("read %d records (sorted %v), want %d in order", len(got), slices.IsSorted(got), objectsN*per)
	}
	one := recordSize(&formats.Record{Stream: "S", Subject: "s.0", Data: []byte(`{"q":1800}`)})
	cursors := int64(objectsN + objectsN/3*2) // the runs of the out-of-order objects
	if s.mem.peak > limit+cursors*one {
		t.Fatalf("%d bytes read ahead at the most; the bound is %d plus one record (%d) for each of %d cursors", s.mem.peak, limit, one, cursors)
	}
	t.Logf("peak %d bytes read ahead, bound %d + %d×%d", s.mem.peak, limit, cursors, one)
}
