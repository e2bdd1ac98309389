package exporter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/content"
)

// capRunner is hotRunner with paths from the payload's key field, one
// buffer per directory, and at most limit directories open at once.
func capRunner(tb testing.TB, limit int) *runner {
	tb.Helper()
	r, s := hotRunner(tb)
	e := r.session
	e.cfg.Output.GroupBy = config.GroupByPath
	e.cfg.Output.PathTemplate = mustTemplate(tb, "{stream}/key={column:key}")
	e.cfg.Output.Columns = []config.Column{{Name: "key", Source: "key", Type: formats.TypeString}}
	e.cfg.Output.MaxOpenDirectories = limit
	var err error
	if e.content, err = content.New(&e.cfg.Output, false); err != nil {
		tb.Fatal(err)
	}
	e.sink = objectSink{cfg: e.cfg, content: true}
	return newRunner(e, []*streamWriter{s})
}

// keyed returns a fake message of sequence seq whose key field is key.
func keyed(seq uint64, key string) *fakeMsg {
	m := &fakeMsg{seq: seq, data: fmt.Appendf(nil, `{"key":%q,"n":%d}`, key, seq)}
	m.Reply()
	return m
}

func TestDistinctValuesBeyondTheCapAreRejectedAndTheOpenDirectoriesKeepTheirRate(t *testing.T) {
	const limit, good, perGood, flood = 10, 4, 100, 1000
	r := capRunner(t, limit)
	seq := uint64(0)
	// Good traffic first: four directories, each open before the flood.
	for i := range perGood {
		for g := range good {
			seq++
			r.add(context.Background(), delivery{msg: keyed(seq, fmt.Sprintf("g%d", g))})
		}
		if i == 0 {
			// A flood of distinct values, the good directories' messages
			// going on among it.
			for f := range flood {
				seq++
				r.add(context.Background(), delivery{msg: keyed(seq, fmt.Sprintf("f%d", f))})
			}
		}
	}
	if got := r.set.Open(); got != limit {
		t.Errorf("%d buffers open, want the cap, %d", got, limit)
	}
	if got, want := r.set.Messages(), good*perGood+limit-good; got != want {
		t.Errorf("%d messages in data buffers, want every good one and the first %d of the flood: %d", got, limit-good, want)
	}
	if got, want := r.rej.Messages(), flood-(limit-good); got != want {
		t.Errorf("%d messages rejected, want the rest of the flood, %d", got, want)
	}
	// One rejected buffer holds them all: a rejected object, not one per
	// value.
	if r.rej.Open() != 1 {
		t.Fatalf("%d rejected buffers, want 1", r.rej.Open())
	}
	r.rej.SealAll("test")
	b := r.rej.TakeSealed()[0]
	if kind := b.Group[len(b.Group)-len("cardinality"):]; kind != "cardinality" {
		t.Errorf("rejected group %q, want the reason cardinality", b.Group)
	}
	// The rejected record says why, and which directory it would have
	// opened.
	body, err := b.Body.Finish()
	if err != nil {
		t.Fatal(err)
	}
	want := `cardinality: directory \"S/key=f6\" would be one more than the 10 written at once (max_open_directories)`
	if body := string(body.Bytes()); !strings.Contains(body, want) {
		t.Errorf("rejected records do not give the reason %q:\n%.600s", want, body)
	}
}

func TestOpenDirectoriesCountUntilTheWindowAfterTheirLastMessage(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	o := newOpenDirs(2, time.Minute)
	steps := []struct {
		at    time.Duration
		dir   string
		sweep bool // sweep at this time instead of admitting
		want  bool
		open  int
	}{
		{at: 0, dir: "a", want: true, open: 1},
		{at: time.Second, dir: "b", want: true, open: 2},
		{at: 2 * time.Second, dir: "c", want: false, open: 2}, // the cap
		{at: 3 * time.Second, dir: "a", want: true, open: 2},  // open: admitted
		{at: 59 * time.Second, dir: "a", want: true, open: 2}, // a keeps its place
		{at: 61 * time.Second, sweep: true, open: 1},          // b had none for a minute
		{at: 62 * time.Second, dir: "c", want: true, open: 2},
		{at: 63 * time.Second, dir: "d", want: false, open: 2},
		{at: 63*time.Second + 500*time.Millisecond, sweep: true, open: 2}, // swept a second ago at most
		{at: 200 * time.Second, sweep: true, open: 0},
		{at: 201 * time.Second, dir: "d", want: true, open: 1},
	}
	for _, s := range steps {
		now := t0.Add(s.at)
		if s.sweep {
			o.sweep(now)
		} else if got := o.admit([]byte(s.dir), now); got != s.want {
			t.Errorf("at %s: admit(%q) = %v, want %v", s.at, s.dir, got, s.want)
		}
		if o.open() != s.open {
			t.Errorf("at %s: %d open, want %d", s.at, o.open(), s.open)
		}
	}
	none := newOpenDirs(0, time.Minute)
	if !none.admit([]byte("x"), t0) || none.open() != 0 {
		t.Error("max_open_directories = 0 caps")
	}
}

func TestAPathOfTheEnvelopeAloneIsNotCapped(t *testing.T) {
	r, _ := hotRunner(t) // "{stream}/{subject}/{date}/{hour}"
	r.cfg.Output.MaxOpenDirectories = 1
	r = newRunner(r.session, r.streams)
	if r.dirs != nil {
		t.Fatal("a cap on directories that follow the JetStream timestamp and subject")
	}
}

func TestOpeningNoDirectoryAllocatesNothing(t *testing.T) {
	o := newOpenDirs(8, time.Minute)
	now := time.Now()
	dirs := [][]byte{[]byte("S/key=a"), []byte("S/key=b")}
	o.admit(dirs[0], now)
	o.admit(dirs[1], now)
	i := 0
	if allocs := testing.AllocsPerRun(100, func() {
		o.admit(dirs[i%2], now)
		i++
	}); allocs != 0 {
		t.Fatalf("%v allocations per message of an open directory", allocs)
	}
}

func TestAFloodOfRejectedMessagesDoesNotSealTheDataBuffersEarly(t *testing.T) {
	r := capRunner(t, 2)
	r.mem.budget = 1 << 20
	seq := uint64(0)
	for _, key := range []string{"a", "b"} {
		seq++
		r.add(context.Background(), delivery{msg: keyed(seq, key)})
	}
	// The flood, rejected, holds most of the budget: its buffer is
	// sealed, not the two directories'.
	for f := range 5000 {
		seq++
		r.add(context.Background(), delivery{msg: keyed(seq, fmt.Sprintf("f%d", f))})
	}
	if r.set.Open() != 2 || r.set.Messages() != 2 {
		t.Errorf("%d data buffers open holding %d messages, want the 2 directories' and their messages", r.set.Open(), r.set.Messages())
	}
	rejected := 0
	for _, j := range r.up.queue {
		if j.set != r.rej {
			t.Fatalf("a data batch of %d messages sealed for %s", j.batch.Len(), j.batch.Reason)
		}
		rejected += j.batch.Len()
	}
	if rejected == 0 {
		t.Error("no rejected batch sealed for memory")
	}
}
