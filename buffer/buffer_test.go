package buffer_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/buffer"
)

var t0 = time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)

// record is a message as the tests add it: its data alone.
type record struct{ data []byte }

// lines is a buffer.Body that writes each record's data and a newline. Its
// memory is the capacity of its bytes.
type lines struct {
	buf  []byte
	prev int // len(buf) before the last Append
}

func (l *lines) Append(r *record) error {
	l.prev = len(l.buf)
	l.buf = append(append(l.buf, r.data...), '\n')
	return nil
}

func (l *lines) Size() int    { return len(l.buf) }
func (l *lines) MemSize() int { return cap(l.buf) }
func (l *lines) DropLast()    { l.buf = l.buf[:l.prev] }
func (l *lines) Reset()       { l.buf, l.prev = l.buf[:0], 0 }

type set = buffer.Set[int, record, *lines]

func newSet(t testing.TB, l buffer.Limits) *set {
	t.Helper()
	return buffer.New[int, record](func() *lines { return new(lines) }, l)
}

func add(t testing.TB, s *set, group, dir string, seq uint64, data string, now time.Time) {
	t.Helper()
	rec := record{data: []byte(data)}
	if err := s.Add([]byte(group), []byte(dir), &rec, seq, now, int(seq), now); err != nil {
		t.Fatal(err)
	}
}

// sealed describes the sealed batches as "group/dir first-last n reason".
func sealed(s *set) []string {
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

func TestSealLargestUntilAndSealMost(t *testing.T) {
	s := newSet(t, buffer.Limits{})
	add(t, s, "a", "d", 1, "xxxxxxxxxxxx", t0)
	add(t, s, "b", "d", 2, "x", t0)
	add(t, s, "b", "d", 3, "x", t0)
	add(t, s, "c", "d", 4, "x", t0)
	if s.SealLargestUntil(buffer.ReasonMemory, 0) != 1 {
		t.Fatal("SealLargestUntil with nothing to free did not seal the largest batch alone")
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

func TestSealWhereSealsEveryMatchingGroup(t *testing.T) {
	s := newSet(t, buffer.Limits{})
	add(t, s, "1\x00a", "d", 1, "x", t0)
	add(t, s, "1\x00b", "d", 2, "x", t0)
	add(t, s, "2\x00a", "d", 3, "x", t0)
	if n := s.SealWhere(buffer.ReasonHandover, func(g string) bool { return strings.HasPrefix(g, "1\x00") }); n != 2 {
		t.Fatalf("SealWhere sealed %d batches, want 2", n)
	}
	got := sealed(s)
	slices.Sort(got)
	if want := []string{"1\x00a/d 1-1 1 handover", "1\x00b/d 2-2 1 handover"}; !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q", got, want)
	}
	if s.Open() != 1 || s.Messages() != 1 {
		t.Fatalf("after SealWhere: %d open, %d messages; want the other group's", s.Open(), s.Messages())
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
	if body := b.Body.buf; string(body) != "x\nx\nx\n" {
		t.Fatalf("body = %q", body)
	}
	s.Release(b)
	// A released batch is reused empty.
	add(t, s, "z", "d", 1, "y", t0)
	s.SealAll(buffer.ReasonShutdown)
	b = s.TakeSealed()[0]
	if body := b.Body.buf; string(body) != "y\n" || b.Len() != 1 {
		t.Fatalf("reused batch = %q with %d items", body, b.Len())
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
	rec := record{data: data}
	group, dir := []byte("0\x00events.a"), []byte("S/events.a/2026-11-29/07")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.Add(group, dir, &rec, uint64(i+1), t0, i, t0); err != nil {
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
	rec := record{data: []byte("x")}
	// Grow the batch's slices first.
	for i := range 2000 {
		if err := s.Add(group, dir, &rec, uint64(i+1), t0, i, t0); err != nil {
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
			if err := s.Add(group, dir, &rec, seq, t0, 0, t0); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations in 1000 calls of Add", allocs)
	}
}

func TestNewestIsTheLatestRecordTimestamp(t *testing.T) {
	s := newSet(t, buffer.Limits{MaxMessages: 3})
	for i, ts := range []time.Time{t0.Add(time.Second), t0.Add(3 * time.Second), t0} {
		rec := record{data: []byte("x")}
		if err := s.Add([]byte("a"), []byte("d"), &rec, uint64(i+1), ts, i, t0); err != nil {
			t.Fatal(err)
		}
	}
	b := s.TakeSealed()[0]
	if !b.Newest.Equal(t0.Add(3*time.Second)) || !b.Opened.Equal(t0) {
		t.Fatalf("Newest = %v, Opened = %v; want %v and %v", b.Newest, b.Opened, t0.Add(3*time.Second), t0)
	}
}

func TestSealLargestUntilSealsInOnePassWhatFreesEnough(t *testing.T) {
	s := newSet(t, buffer.Limits{Overhead: 100})
	add(t, s, "a", "d", 1, "xxxxxxxxxxxx", t0)
	add(t, s, "b", "d", 2, "xxxxxx", t0)
	add(t, s, "c", "d", 3, "x", t0)
	add(t, s, "e", "d", 4, "x", t0.Add(time.Second))
	mem := s.Mem()
	if n := s.SealLargestUntil(buffer.ReasonMemory, 1); n != 1 {
		t.Fatalf("sealed %d batches to free 1 byte, want the largest alone", n)
	}
	if n := s.SealLargestUntil(buffer.ReasonMemory, mem); n != 3 {
		t.Fatalf("sealed %d batches to free everything, want the 3 left", n)
	}
	want := []string{"a/d 1-1 1 memory", "b/d 2-2 1 memory", "c/d 3-3 1 memory", "e/d 4-4 1 memory"}
	if got := sealed(s); !slices.Equal(got, want) {
		t.Fatalf("sealed = %q, want %q (largest first, then the oldest)", got, want)
	}
	if s.Open() != 0 || s.Mem() != 0 || s.SealLargestUntil(buffer.ReasonMemory, 1) != 0 {
		t.Fatalf("after sealing all: %d open, Mem %d", s.Open(), s.Mem())
	}
}

func TestMemCountsEachOpenBatchsOverhead(t *testing.T) {
	s := newSet(t, buffer.Limits{Overhead: 1000})
	add(t, s, "a", "d", 1, "x", t0)
	one := s.Mem()
	add(t, s, "b", "d", 2, "x", t0)
	if per := s.Mem() - one; per < 1000+100 {
		t.Fatalf("a second open batch adds %d bytes to Mem, want its overhead of 1000 and the batch's own", per)
	}
	s.SealAll(buffer.ReasonShutdown)
	if s.Mem() != 0 {
		t.Fatalf("Mem %d after sealing every batch", s.Mem())
	}
}
