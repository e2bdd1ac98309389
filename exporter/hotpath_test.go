package exporter

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// hotRunner is a runner with one stream of fake messages, for measuring the
// path from a delivered message to the buffer append.
func hotRunner(tb testing.TB) (*runner, *streamWriter) {
	tb.Helper()
	e := testExporter(tb, &MemStore{})
	var err error
	if e.rejEnc, err = formats.New(formats.Options{Format: formats.JSONLines, Metadata: true, Headers: true}); err != nil {
		tb.Fatal(err)
	}
	e.cfg.Output.GroupBy = config.GroupBySubject
	e.cfg.Output.PathTemplate = mustTemplate(tb, "{stream}/{subject}/{date}/{hour}")
	e.cfg.Rotation = config.Rotation{MaxFileSize: 8 << 20, MaxMessagesPerFile: 1000, MaxFileAge: time.Minute, MaxBufferedBytes: 256 << 20}
	e.cfg.S3.UploadConcurrency = 1
	e.opts.MaxObjectSize = 5 << 30
	s := newStreamWriter(e, config.Stream{Stream: "S", Consumer: "c", AckWait: time.Minute, MaxAckPending: 1 << 20})
	s.book.Start(0, nil, 1, 0, false, false)
	r := newRunner(e, []*streamWriter{s})
	return r, s
}

// drain completes the queued jobs as if they were uploaded and acked.
func drain(r *runner) {
	for _, j := range r.up.queue {
		r.finish(context.Background(), &result{job: j, status: jobStored})
	}
	r.up.queue = r.up.queue[:0]
}

func fakeMsgs(n int) []*fakeMsg {
	data := []byte(`{"user":{"id":42,"name":"ada"},"items":[{"sku":"a-1","qty":2}],"total":19.99,"note":"compact json payload of about two hundred and fifty six bytes, give or take a few, for the hot path"}`)
	msgs := make([]*fakeMsg, n)
	for i := range msgs {
		msgs[i] = &fakeMsg{seq: uint64(i + 1), data: data}
		msgs[i].Reply()
	}
	return msgs
}

func TestAddingAMessageDoesNotAllocateInSteadyState(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop some of what it is given")
	}
	// AllocsPerRun sets GOMAXPROCS to 1, and a sync.Pool drops what it
	// holds when GOMAXPROCS changes: set it before the pools fill.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	// A collection empties the pools (two empty them for good): with the
	// collector on, a batch started after one allocates its buffer again,
	// which is the pool's rule, not the hot path's.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	r, _ := hotRunner(t)
	msgs := fakeMsgs(20000)
	// Warm up: fill and flush a few batches so slices and maps have grown.
	for _, m := range msgs[:5000] {
		r.add(context.Background(), delivery{msg: m})
		if len(r.up.queue) > 0 {
			drain(r)
		}
	}
	// One run of 450 messages after as many to warm up, all in one batch
	// (a file holds 1000): allocs is the exact total, where AllocsPerRun
	// of single messages would truncate the average to an integer.
	i := 5000
	allocs := testing.AllocsPerRun(1, func() {
		for range 450 {
			r.add(context.Background(), delivery{msg: msgs[i]})
			i++
		}
	})
	drain(r)
	if allocs != 0 {
		t.Fatalf("%v allocations in 450 messages", allocs)
	}
}

func BenchmarkAdd(b *testing.B) {
	r, _ := hotRunner(b)
	msgs := fakeMsgs(1 << 16)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m := msgs[i%len(msgs)]
		m.seq = uint64(i + 1)
		r.add(context.Background(), delivery{msg: m})
		if len(r.up.queue) > 0 {
			drain(r)
		}
		i++
	}
}

func mustTemplate(tb testing.TB, src string) *pathtemplate.Template {
	tb.Helper()
	t, err := pathtemplate.Parse(src)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}
