package buffer_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/formats"
)

var t0 = time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)

func newSet(t testing.TB, l buffer.Limits) *buffer.Set[int] {
	t.Helper()
	enc, err := formats.New(formats.Options{Format: formats.Raw, RawDelimiter: []byte("\n")})
	if err != nil {
		t.Fatal(err)
	}
	return buffer.New[int](enc, l)
}

func add(t testing.TB, s *buffer.Set[int], group, dir string, seq uint64, data string, now time.Time) {
	t.Helper()
	rec := formats.Record{Stream: "S", Subject: group, Sequence: seq, Time: now, Data: []byte(data)}
	if err := s.Add([]byte(group), []byte(dir), &rec, int(seq), now); err != nil {
		t.Fatal(err)
	}
}

// sealed describes the sealed batches as "group/dir first-last n reason".
func sealed(s *buffer.Set[int]) []string {
	var out []string
	for _, b := range s.TakeSealed() {
		out = append(out, fmt.Sprintf("%s/%s %d-%d %d %s", b.Group, b.Dir, b.First, b.Last, b.Len(), b.Reason))
	}
	return out
}

func TestCountLimitSealsAtExactlyMaxMessages(t *testing.T) {
	s := newSet(t, buffer.Limits{MaxMessages: 3})
	for seq := uint64(1); seq <= 7; seq++ {
		add(t, s, "a", "d", seq, "x", t0)
	}
	want := []string{"a/d 1-3 3 count", "a/d 4-6 3 count"}
	if got := sealed(s); !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q", got, want)
	}
	if s.Messages() != 1 || s.Open() != 1 {
		t.Fatalf("open: %d messages in %d batches, want 1 in 1", s.Messages(), s.Open())
	}
}

func TestSizeLimitNeverExceeded(t *testing.T) {
	// Each record is 4 bytes ("abc\n"); 10 bytes hold two.
	s := newSet(t, buffer.Limits{MaxBytes: 10})
	for seq := uint64(1); seq <= 5; seq++ {
		add(t, s, "a", "d", seq, "abc", t0)
	}
	want := []string{"a/d 1-2 2 size", "a/d 3-4 2 size"}
	if got := sealed(s); !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q", got, want)
	}
	if s.Bytes() != 4 {
		t.Fatalf("open bytes = %d, want 4", s.Bytes())
	}
}

func TestSizeLimitReachedExactlySeals(t *testing.T) {
	s := newSet(t, buffer.Limits{MaxBytes: 8})
	add(t, s, "a", "d", 1, "abc", t0)
	add(t, s, "a", "d", 2, "abc", t0)
	want := []string{"a/d 1-2 2 size"}
	if got := sealed(s); !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q", got, want)
	}
}

func TestOversizedMessageGetsItsOwnBatch(t *testing.T) {
	s := newSet(t, buffer.Limits{MaxBytes: 10})
	add(t, s, "a", "d", 1, "ab", t0)
	add(t, s, "a", "d", 2, "0123456789abcdef", t0)
	add(t, s, "a", "d", 3, "ab", t0)
	want := []string{"a/d 1-1 1 size", "a/d 2-2 1 size"}
	if got := sealed(s); !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q", got, want)
	}
	if s.Messages() != 1 {
		t.Fatalf("open messages = %d, want 1", s.Messages())
	}
}

func TestPathChangeSealsTheGroupsPreviousDirectory(t *testing.T) {
	s := newSet(t, buffer.Limits{MaxMessages: 100})
	add(t, s, "a", "h07", 1, "x", t0)
	add(t, s, "b", "h07", 2, "x", t0)
	add(t, s, "a", "h08", 3, "x", t0)
	want := []string{"a/h07 1-1 1 path"}
	if got := sealed(s); !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q", got, want)
	}
	if s.Open() != 2 {
		t.Fatalf("open batches = %d, want 2 (a/h08 and b/h07)", s.Open())
	}
}

func TestAgeSealsOnlyOldBatches(t *testing.T) {
	s := newSet(t, buffer.Limits{MaxAge: time.Minute})
	add(t, s, "a", "d", 1, "x", t0)
	add(t, s, "b", "d", 2, "x", t0.Add(30*time.Second))
	if next, ok := s.NextExpiry(); !ok || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("NextExpiry = %v, %v; want %v", next, ok, t0.Add(time.Minute))
	}
	s.Expire(t0.Add(59 * time.Second))
	if got := sealed(s); len(got) != 0 {
		t.Fatalf("sealed before the age: %q", got)
	}
	s.Expire(t0.Add(time.Minute))
	want := []string{"a/d 1-1 1 age"}
	if got := sealed(s); !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q", got, want)
	}
}

func TestOutOfOrderSequencesGiveTheTrueRange(t *testing.T) {
	s := newSet(t, buffer.Limits{MaxMessages: 3})
	add(t, s, "a", "d", 9, "x", t0)
	add(t, s, "a", "d", 4, "x", t0)
	add(t, s, "a", "d", 6, "x", t0)
	want := []string{"a/d 4-9 3 count"}
	if got := sealed(s); !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q", got, want)
	}
}

func TestSealLargestAndSealMost(t *testing.T) {
	s := newSet(t, buffer.Limits{})
	add(t, s, "a", "d", 1, "xxxxxxxxxxxx", t0)
	add(t, s, "b", "d", 2, "x", t0)
	add(t, s, "b", "d", 3, "x", t0)
	add(t, s, "c", "d", 4, "x", t0)
	if !s.SealLargest(buffer.ReasonMemory) {
		t.Fatal("SealLargest found nothing")
	}
	if !s.SealMost(buffer.ReasonPending, nil) {
		t.Fatal("SealMost found nothing")
	}
	if s.SealMost(buffer.ReasonPending, func(g string) bool { return g == "zzz" }) {
		t.Fatal("SealMost sealed a batch its match rejected")
	}
	want := []string{"a/d 1-1 1 memory", "b/d 2-3 2 pending"}
	if got := sealed(s); !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q", got, want)
	}
	s.SealAll(buffer.ReasonShutdown)
	if got := sealed(s); !slices.Equal(got, []string{"c/d 4-4 1 shutdown"}) {
		t.Fatalf("sealed = %q", got)
	}
	if s.Open() != 0 || s.Bytes() != 0 || s.Messages() != 0 {
		t.Fatalf("after SealAll: %d open, %d bytes, %d messages", s.Open(), s.Bytes(), s.Messages())
	}
}

func TestItemsKeepHandlesInArrivalOrder(t *testing.T) {
	s := newSet(t, buffer.Limits{MaxMessages: 3})
	for _, seq := range []uint64{5, 2, 7} {
		add(t, s, "a", "d", seq, "x", t0)
	}
	b := s.TakeSealed()[0]
	var handles []int
	for _, it := range b.Items {
		handles = append(handles, it.Handle)
	}
	if !slices.Equal(handles, []int{5, 2, 7}) {
		t.Fatalf("handles = %v", handles)
	}
	body, err := b.Body.Finish()
	if err != nil || string(body.Bytes()) != "x\nx\nx\n" {
		t.Fatalf("body = %q, %v", body.Bytes(), err)
	}
	s.Release(b)
	// A released batch is reused empty.
	add(t, s, "z", "d", 1, "y", t0)
	s.SealAll(buffer.ReasonShutdown)
	b = s.TakeSealed()[0]
	if body, _ := b.Body.Finish(); string(body.Bytes()) != "y\n" || b.Len() != 1 {
		t.Fatalf("reused batch = %q with %d items", body.Bytes(), b.Len())
	}
}

func TestBytesTrackOpenBatches(t *testing.T) {
	s := newSet(t, buffer.Limits{})
	add(t, s, "a", "d", 1, "abc", t0)
	add(t, s, "b", "e", 2, "abcdefg", t0)
	if s.Bytes() != 12 {
		t.Fatalf("Bytes = %d, want 12", s.Bytes())
	}
}

func BenchmarkAdd(b *testing.B) {
	s := newSet(b, buffer.Limits{MaxMessages: 1000, MaxBytes: 8 << 20})
	data := []byte(`{"user":{"id":42,"name":"ada"},"items":[{"sku":"a-1","qty":2}],"total":19.99}`)
	rec := formats.Record{Stream: "S", Subject: "events.a", Time: t0, Data: data}
	group, dir := []byte("0\x00events.a"), []byte("S/events.a/2026-11-29/07")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rec.Sequence = uint64(i + 1)
		if err := s.Add(group, dir, &rec, i, t0); err != nil {
			b.Fatal(err)
		}
		for _, sb := range s.TakeSealed() {
			s.Release(sb)
		}
	}
}

func TestAddingToAnOpenBatchDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop some of what it is given")
	}
	// AllocsPerRun sets GOMAXPROCS to 1, and a sync.Pool drops what it
	// holds when GOMAXPROCS changes: set it before the pools fill.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := newSet(t, buffer.Limits{MaxMessages: 1 << 20})
	group, dir := []byte("g"), []byte("d")
	rec := formats.Record{Stream: "S", Subject: "g", Time: t0, Data: []byte("x")}
	// Grow the batch's slices first.
	for i := range 2000 {
		rec.Sequence = uint64(i + 1)
		if err := s.Add(group, dir, &rec, i, t0); err != nil {
			t.Fatal(err)
		}
	}
	s.SealAll(buffer.ReasonShutdown)
	s.Release(s.TakeSealed()[0])
	seq := uint64(10000)
	// One run of 1000 adds, so that allocs is the exact total:
	// AllocsPerRun truncates its average to an integer.
	allocs := testing.AllocsPerRun(1, func() {
		for range 1000 {
			seq++
			rec.Sequence = seq
			if err := s.Add(group, dir, &rec, 0, t0); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations in 1000 calls of Add", allocs)
	}
}
