package exporter

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/pathtemplate"
)

// runner is the state of one Run. Only the goroutine in run touches it.
type runner struct {
	// The session the runner works in: its connection, state bucket,
	// sink, partitioned entries (groups, whose partitions are among
	// streams) and leases.
	*session
	streams []*streamWriter
	set     *batchSet // data
	rej     *batchSet // rejected messages
	// dirs caps the directories open at once when publishers choose
	// them; nil when they do not.
	dirs *openDirs
	// rejected counts the rejected messages for the log's summary.
	rejected rejections

	wires  wires   // the channels between the loop and everything else
	intake intake  // what adding one message reuses
	mem    memory  // the memory budget and what holds it
	up     uploads // sealed batches on their way to the store
	chores chores  // work beside the loop, and the checks that start it

	// stoppingNow: the runner is on its way out; partitions it releases
	// are left, not handed over.
	stoppingNow bool
	fatalErr    error // a failure found inside add, returned by the loop
}

// wires are the channels between the loop and the pulls, uploaders and
// work beside it.
type wires struct {
	in       chan delivery
	fatal    chan error
	jobs     chan *job
	results  chan *result
	gather   chan *result  // stored small batches whose acks wait for others (ackGatherer)
	back     chan func()   // from work beside the loop: what to apply on it
	stopping chan struct{} // closed when the loop ends: work beside it stops reporting
	quit     chan struct{} // closed when run returns: pulls stop handing messages over
}

// intake is what adding one message reuses, so that it allocates nothing,
// and the compressors the encoder hands its chunks to.
type intake struct {
	chunks   formats.ChunkSource // the data encoder, when it defers compression
	chunkBuf []*formats.Chunk
	compress chan *formats.Chunk // to the compressors
	rec      formats.Record
	dirBuf   []byte
	grpBuf   []byte
	tplVals  pathtemplate.Values
}

// memory is the budget of buffered bytes and what holds memory besides
// the buffers.
type memory struct {
	budget  int64
	heldMem int64 // memory of the delivered messages kept for their acks
	// The most memory held at once, open buffers, uploads and held
	// messages together, and the gauge that exports it.
	peak  int64
	mPeak prometheus.Gauge
}

// uploads are the sealed batches on their way to the store.
type uploads struct {
	queue         []*job            // sealed batches waiting for an uploader
	uploading     map[bufferKey]int // batches with an uploader, by buffer key
	inflight      int               // jobs not yet done
	inflightBytes int64             // bytes of sealed batches not yet done
	large         int               // uploads of more than smallUpload bytes with an uploader
	written       int64             // messages in data objects this run stored
	// confirming: the server is asked to answer the InProgress sent for
	// queued batches.
	confirming bool
}

// chores is the work beside the loop: the chores the loop starts when they
// are due, and how much work beside it is not yet applied.
type chores struct {
	besideN int            // work beside the loop not yet applied
	bg      sync.WaitGroup // work beside the loop: intent deletions, walks, record writes, lookups
	list    []*chore       // in the order they start, and run on the way out
	idle    *chore         // nil without Options.UntilIdle

	lastGauge   time.Time
	idleDone    bool // an idle check found the work done
	lastMsg     time.Time
	forgetQueue []string // intents to delete (forgetChore)
}

// makeChores makes the runner's chores. The order is the order of the
// way out: the sink's upkeep (a table's commit) first, then the export records, then the
// intents and plans their floors passed.
func (r *runner) makeChores() {
	c := &r.chores
	c.idle = r.idleChore()
	upkeep, cleanup := r.sink.chores(r)
	for _, s := range r.streams {
		s.chores = s.makeChores()
	}
	add := func(ch *chore) {
		if ch != nil {
			c.list = append(c.list, ch)
		}
	}
	add(r.gaugeChore())
	for _, s := range r.streams {
		sc := s.chores
		add(sc.consumer)
		add(sc.unpinned)
		add(sc.resolve)
		add(sc.walk)
	}
	add(r.leaseChore())
	add(r.intentsAheadChore())
	for _, ch := range upkeep {
		add(ch)
	}
	for _, s := range r.streams {
		sc := s.chores
		add(sc.save)
		add(sc.release)
	}
	add(r.forgetChore())
	for _, ch := range cleanup {
		add(ch)
	}
	add(c.idle)
}

func newRunner(e *session, streams []*streamWriter) *runner {
	rot := e.cfg.Rotation
	limits := buffer.Limits{
		MaxBytes:    int(rot.MaxFileSize),
		MaxMessages: rot.MaxMessagesPerFile,
		MaxAge:      rot.MaxFileAge,
		Overhead:    bodyOverhead,
	}
	var dirs *openDirs
	if e.sink.manyDirs() {
		dirs = newOpenDirs(e.cfg.Output.MaxOpenDirectories, rot.MaxFileAge)
	}
	r := &runner{
		session: e,
		streams: streams,
		set:     buffer.New[jsclient.AckRef, formats.Record](e.enc.NewBatch, limits),
		// Rejected messages wait in their own buffers, one object per stream
		// and day, under _jetlake/rejected/.
		rej:  buffer.New[jsclient.AckRef, formats.Record](e.rejEnc.NewBatch, limits),
		dirs: dirs,
		wires: wires{
			in:       make(chan delivery, 64),
			fatal:    make(chan error, len(streams)+1),
			jobs:     make(chan *job),
			results:  make(chan *result, uploaders(e.cfg.S3.UploadConcurrency)),
			back:     make(chan func(), 16),
			stopping: make(chan struct{}),
			quit:     make(chan struct{}),
		},
		mem: memory{budget: rot.MaxBufferedBytes, mPeak: e.m.BufferedPeak.WithLabelValues(e.cfg.Name)},
		up:  uploads{uploading: map[bufferKey]int{}},
	}
	for _, s := range streams {
		s.hub = r
	}
	r.makeChores()
	return r
}

// bodyOverhead is about the memory a batch's body holds beyond its
// MemSize, which counts its buffers: the body's structs (measured: 1.4 KB
// per batch of one small message, of which the buffer counts the rest).
// With 100,000 subjects of one message each it is most of what they take.
const bodyOverhead = 512

// jobOverhead is about what a sealed batch on its way to the store holds
// beyond its batch: the job, its result, intent and metadata.
const jobOverhead = 512

// pullBytes bounds the bytes the client buffers per consumer ahead of the
// runner, so the pull buffer counts inside the memory budget. It is never
// below the largest message the server takes (its max_payload) and room for
// the message's subject and reply: the server sends nothing to a pull whose
// limit is below the next message's size, and the client asks again with the
// same limit, so one large message would stop the consumer for good.
func (r *runner) pullBytes() int {
	b := r.mem.budget / int64(8*len(r.streams))
	b = min(max(b, 64<<10), 16<<20)
	if nc := r.nc; nc != nil {
		b = max(b, nc.MaxPayload()+pullMargin)
	}
	return int(b)
}

// pullMargin is room in a pull's byte limit for a message's subject, reply
// subject and framing, beyond its headers and data.
const pullMargin = 16 << 10

func (r *runner) run(ctx context.Context) error {
	// Uploads outlive ctx: on shutdown they get the shutdown timeout.
	uctx, cancelUploads := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelUploads()
	stopWorkers := r.startWorkers(uctx)
	defer func() {
		r.rejected.report(r.log, time.Now(), true, r.cfg.S3.Prefix)
		close(r.wires.quit)
		for _, s := range r.streams {
			if s.cur.cc != nil {
				s.cur.cc.Stop()
			}
		}
		cancelUploads()
		stopWorkers()
	}()
	if err := r.start(ctx); err != nil {
		return err
	}
	if err := r.loop(ctx); err != nil {
		return err
	}
	return r.shutdown(ctx)
}

// start starts pulling every consumer that is not a partition's, and runs
// the first lease round before the loop: the partitions this instance may
// take are pulled from the start.
func (r *runner) start(ctx context.Context) error {
	for _, s := range r.streams {
		if s.part == nil {
			if err := r.pull(s); err != nil {
				return err
			}
		}
	}
	if l := r.leases; l != nil {
		l.last = time.Now()
		r.applyRound(ctx, l.Round(ctx, 0, nil, r.groupSnaps()), l.last)
		if r.fatalErr != nil {
			return r.fatalErr
		}
	}
	return nil
}

// shutdown stops in order: it hands over what the client already
// buffered, seals everything and uploads it within the shutdown timeout,
// applies what the work beside the loop still reports, commits what is
// stored to the table, writes the export records and leaves.
func (r *runner) shutdown(ctx context.Context) error {
	if err := r.drainPulls(ctx); err != nil {
		return err
	}
	r.takeQueued(ctx, math.MaxInt, func() bool { return false })
	r.flushPoison()
	r.set.SealAll(buffer.ReasonShutdown)
	r.rej.SealAll(buffer.ReasonShutdown)
	r.takeSealed()
	stopBy := time.Now().Add(r.cfg.ShutdownTimeout)
	deadline := time.NewTimer(r.cfg.ShutdownTimeout)
	defer deadline.Stop()
	if done, err := r.uploadRest(ctx, deadline.C); done || err != nil {
		return err
	}
	// Apply what the work beside the loop still reports (deleted intents
	// among it); from here on, everything is done in order.
	for r.chores.besideN > 0 {
		select {
		case apply := <-r.wires.back:
			r.chores.besideN--
			apply()
		case <-deadline.C:
			r.log.Warn("shutdown timeout while waiting for the state bucket and the catalog; the next start finishes their work")
			r.leave(ctx, false)
			return nil
		}
	}
	// What is stored goes into the table before the process ends (what a
	// commit cut short leaves, the next start commits), then the export
	// records, then the intents their floors passed.
	r.finishChores(ctx, stopBy)
	r.leave(ctx, true)
	r.log.Info("stopped cleanly", "messages_written", r.up.written)
	return nil
}

// drainPulls stops every pull and adds what the client had buffered.
func (r *runner) drainPulls(ctx context.Context) error {
	var closed []<-chan struct{}
	for _, s := range r.streams {
		if s.cur.cc != nil {
			s.cur.cc.Drain()
			closed = append(closed, s.cur.cc.Closed())
		}
	}
	pullersDone := make(chan struct{})
	go func() {
		for _, c := range closed {
			<-c
		}
		close(pullersDone)
	}()
	for {
		select {
		case d := <-r.wires.in:
			r.add(ctx, d)
		case <-pullersDone:
			return nil
		case err := <-r.wires.fatal:
			return err
		}
	}
}

// uploadRest uploads the sealed batches left, until none is in flight or
// the shutdown deadline fires. done reports that the deadline fired and
// the runner left, its unuploaded messages unacked.
func (r *runner) uploadRest(ctx context.Context, deadline <-chan time.Time) (done bool, err error) {
	r.writeIntentsAhead(ctx)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for r.up.inflight > 0 {
		jobs, next, idx := r.offer()
		select {
		case jobs <- next:
			r.dispatched(idx)
		case now := <-tick.C:
			r.keepQueuedInProgress(now)
		case res := <-r.wires.results:
			if err := r.finish(ctx, res); err != nil {
				return true, err
			}
		case <-deadline:
			r.log.Warn("shutdown timeout: leaving unuploaded messages unacked; JetStream redelivers them",
				"batches", r.up.inflight, "bytes", r.up.inflightBytes, "shutdown_timeout", r.cfg.ShutdownTimeout)
			r.forgetIntentsAhead(ctx)
			r.finishChores(ctx, time.Now())
			r.leave(ctx, false)
			return true, nil
		}
	}
	return false, nil
}

// loop is the steady state: take messages while memory allows, seal what is
// due, feed uploaders, collect results. It returns nil when it is time to
// stop (ctx ended, or idle with Options.UntilIdle).
func (r *runner) loop(ctx context.Context) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var fast <-chan time.Time
	if r.opts.UntilIdle {
		t := time.NewTicker(fastIdle)
		defer t.Stop()
		fast = t.C
	}
	for {
		var in chan delivery
		if r.underBudget() {
			in = r.wires.in
		}
		jobs, next, idx := r.offer()
		select {
		case <-ctx.Done():
			return nil
		case err := <-r.wires.fatal:
			return err
		case d := <-in:
			r.add(ctx, d)
			// Take what else is queued, up to a bound, before going
			// round the whole select again: at 200,000 messages a
			// second that select was a tenth of the CPU.
			r.takeQueued(ctx, intakeRun-1, func() bool { return r.fatalErr != nil || !r.underBudget() })
			if r.fatalErr != nil {
				return r.fatalErr
			}
		case jobs <- next:
			r.dispatched(idx)
		case res := <-r.wires.results:
			if err := r.finish(ctx, res); err != nil {
				return err
			}
		case apply := <-r.wires.back:
			r.chores.besideN--
			apply()
			if r.fatalErr != nil {
				return r.fatalErr
			}
			if r.chores.idleDone {
				return nil
			}
		case now := <-tick.C:
			r.set.Expire(now)
			r.rej.Expire(now)
			r.dirs.sweep(now)
			r.rejected.report(r.log, now, false, r.cfg.S3.Prefix)
			r.takeSealed()
			r.keepQueuedInProgress(now)
			r.notePullTrouble(now)
			r.sealHandovers()
			r.flushPoison()
			r.gauges(now)
			r.startChores(ctx, now)
		case now := <-fast:
			// The last deliveries may have said nothing more was
			// pending: check at once rather than after half a second of
			// quiet.
			r.tryChore(ctx, r.chores.idle, now)
		}
	}
}

// intakeRun bounds the messages the loop takes in a row before it looks at
// uploads, results and timers again.
const intakeRun = 64

// takeQueued adds the deliveries queued already, up to max of them, until
// stop says to look at something else.
func (r *runner) takeQueued(ctx context.Context, max int, stop func() bool) {
	for range max {
		if stop() {
			return
		}
		select {
		case d := <-r.wires.in:
			r.add(ctx, d)
		default:
			return
		}
	}
}

// underBudget reports whether memory allows taking another message.
func (r *runner) underBudget() bool {
	return r.openMem()+r.up.inflightBytes+r.mem.heldMem < r.mem.budget
}

// fastIdle is how long Options.UntilIdle waits after a delivery that said
// nothing more was pending before it checks whether the work is done.
const fastIdle = 25 * time.Millisecond

// drained reports whether the last delivery of every stream said its
// consumer had nothing more to deliver.
func (r *runner) drained() bool {
	for _, s := range r.streams {
		if !s.cur.drained && s.cur.cc != nil {
			return false
		}
	}
	return true
}

// fail records a failure found while handling a message; the loop returns
// it.
func (r *runner) fail(err error) {
	if r.fatalErr == nil {
		r.fatalErr = err
	}
}

// openMem is the memory held by open buffers.
func (r *runner) openMem() int64 { return r.set.Mem() + r.rej.Mem() }

// gauges sets the gauges that describe the runner's state.
func (r *runner) gauges(now time.Time) {
	m, name := r.m, r.cfg.Name
	m.BufferedBytes.WithLabelValues(name).Set(float64(r.openMem() + r.up.inflightBytes + r.mem.heldMem))
	age := 0.0
	if exp, ok := r.set.NextExpiry(); ok {
		age = max(now.Sub(exp.Add(-r.cfg.Rotation.MaxFileAge)).Seconds(), 0)
	}
	m.OldestBuffered.WithLabelValues(name).Set(age)
	m.OpenBuffers.WithLabelValues(name).Set(float64(r.set.Open()))
	if r.dirs != nil {
		m.OpenDirectories.WithLabelValues(name).Set(float64(r.dirs.open()))
	}
	// Summed by stream: the partitions of one stream share its labels.
	held := map[string]int{}
	newest := map[string]time.Time{}
	for _, s := range r.streams {
		n, _ := s.book.Counts()
		held[s.cfg.Stream] += n
		if s.newest.After(newest[s.cfg.Stream]) {
			newest[s.cfg.Stream] = s.newest
		}
	}
	for stream, n := range held {
		m.BufferedMessages.WithLabelValues(name, stream).Set(float64(n))
		if t := newest[stream]; !t.IsZero() {
			m.Freshness.WithLabelValues(name, stream).Set(now.Sub(t).Seconds())
		}
	}
}

// takeArrived takes in the deliveries queued for the loop already.
func (r *runner) takeArrived(ctx context.Context) {
	r.takeQueued(ctx, cap(r.wires.in), func() bool { return false })
}

// stopping reports whether the runner is on its way out.
func (r *runner) stopping() bool { return r.stoppingNow }
