package exporter

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/fault"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/lossmarker"
)

// The commit unit: a sealed batch (or loss marker) as a job, the uploaders
// that store it, the acks that follow, and the result the loop applies,
// which says where the job ended in one status. Storing is upload.go's;
// the acks of small batches may wait to go with others (ackgather.go);
// the order in which jobs reach the uploaders is queue.go's.

// job is a sealed batch, or a loss marker, on its way to the store.
type job struct {
	stream   *streamWriter // uploaders read only cfg, created and intentPrefix
	batch    *msgBatch
	size     int64           // memory the batch holds, counted in the budget
	set      *batchSet       // the set the batch returns to
	enc      formats.Encoder // the batch's encoder
	format   string          // and its format's name
	intentID string          // id of the batch's intent
	pin      string          // the pin id of a pinned consumer when the batch was sealed: its store is fenced by it
	// progress is when InProgress was last sent for the batch while it
	// waited in the queue, or when the batch opened: it paces InProgress.
	progress time.Time
	// confirmed (unix nanoseconds) is a time at or before which the server
	// surely (re)started the AckWait clock of every message of the batch:
	// when the batch opened, or when InProgress went out that the server
	// answered. The uploader starts from it. It is atomic because the
	// answer may come once an uploader has the job.
	confirmed atomic.Int64

	uploading bool // handed to an uploader
	large     bool // handed to an uploader as a large upload

	marker *lossmarker.Marker // instead of a batch
	term   []jsclient.AckRef  // poison messages to terminate once the marker is stored
}

// bufferKey names the buffer a batch was filled in: its set and group.
// Batches of one buffer are uploaded one after the other, in order.
type bufferKey struct {
	set   *batchSet
	group string
}

// key returns the buffer key of the job's batch.
func (j *job) key() bufferKey { return bufferKey{j.set, j.batch.Group} }

// result is what an uploader reports about a job.
type result struct {
	job       *job
	key       string
	bytes     int
	duration  time.Duration
	err       error         // why the job ended short of jobConfirmed, if known
	status    jobStatus     // where the job ended
	intentKey string        // the batch's intent
	seqs      []byte        // the batch's sequences, as progress.Seqs.MarshalJSON encodes them
	set       progress.Seqs // and as runs, when the uploader built them
	tail      *iceberg.Tail // an Iceberg data file's end, for its commit

	// acks, when set, still has to ack the stored batch's messages and set
	// confirmed; the uploader leaves it to another goroutine so as to take
	// the next job (see runner.send).
	acks func(context.Context)
	// ackBy is when the batch's messages may be redelivered to another
	// consumer, less a margin: no ack may leave after it.
	ackBy time.Time
	// notice marks a result sent ahead of a stored batch's result while
	// its acks wait to go with others': the upload is over.
	notice bool
}

// jobStatus is where a job ended. The zero value claims nothing stored.
type jobStatus uint8

const (
	// jobFailed: nothing stored; the messages stay unacked and are
	// redelivered (err says why).
	jobFailed jobStatus = iota
	// jobFenced: nothing stored; the batch is left to the instance the
	// consumer is pinned to now.
	jobFenced
	// jobAbandoned: nothing stored; AckWait passed before the batch could
	// be.
	jobAbandoned
	// jobStored: the object (or loss marker) is in the store; its acks
	// were not confirmed (err says why, when they were not even sent), and
	// recovery acks the messages when they come back.
	jobStored
	// jobConfirmed: stored, and the server confirmed the acks.
	jobConfirmed
)

// isStored reports whether the job's object is in the store.
func (s jobStatus) isStored() bool { return s >= jobStored }

// notStored is the status of a job that ended with err before its object
// was stored.
func notStored(err error) jobStatus {
	switch {
	case errors.Is(err, errFenced):
		return jobFenced
	case errors.Is(err, ErrAbandoned):
		return jobAbandoned
	}
	return jobFailed
}

// ack runs the acks the result still has to run, if any.
func (res *result) ack(ctx context.Context) {
	if res.acks != nil {
		res.acks(ctx)
		res.acks = nil
	}
}

// acked records how the acks of the result's stored batch ended, err from
// Exporter.ackBatches: confirmed, or a warning, and recovery acks the
// messages when they come back.
func (res *result) acked(log *slog.Logger, err error) {
	res.acks = nil
	if err != nil {
		log.Warn("object stored but acks failed; recovery acks its messages when they come back",
			"key", res.key, "error", err)
		return
	}
	res.status = jobConfirmed
	fault.Point("after-confirm") // the point counts batches
}

// finish accounts for a job that ended, one way or another, or, for a
// notice of a stored batch whose acks wait (see runner.send), for the end
// of its upload: the runner's memory, uploads and sink, then the writer's
// record of the batch.
func (r *runner) finish(res *result) error {
	j := res.job
	r.uploaded(j)
	if res.notice {
		return nil
	}
	s := j.stream
	if s != nil {
		s.jobs--
	}
	r.up.inflight--
	r.up.inflightBytes -= j.size
	if permanent(res.err) {
		return res.err
	}
	if j.marker != nil {
		s.markerDone(j, res)
		return nil
	}
	b := j.batch
	defer j.set.Release(b)
	for _, it := range b.Items {
		r.mem.heldMem -= it.Handle.Mem()
	}
	rejected := j.set == r.rej
	if res.status.isStored() {
		r.up.written += int64(b.Len())
		if !rejected && res.intentKey != "" {
			r.sink.stored(res.intentKey, res.key, b.First, b.Last, res.tail)
		}
	}
	s.batchDone(j, res, rejected)
	return nil
}

// markerDone records in the writer's book how a loss marker's job ended.
func (s *streamWriter) markerDone(j *job, res *result) {
	var term []uint64
	for _, ref := range j.term {
		term = append(term, ref.Seq())
	}
	s.book.MarkerDone(j.marker.Runs(), term, res.status.isStored())
	if res.status.isStored() {
		s.sn.m.Lost.WithLabelValues(s.sn.cfg.Name, s.cfg.Stream, string(j.marker.Reason)).Add(float64(j.marker.Count))
	}
}

// batchDone records in the writer's book how a batch's job ended, counts
// it, and says so: a batch given up because the store refused its key, or
// after its intent was recorded, leaves its messages to come back.
// rejected: the batch is of rejected messages.
func (s *streamWriter) batchDone(j *job, res *result, rejected bool) {
	b := j.batch
	for _, it := range b.Items {
		s.book.Release(it.Seq)
	}
	seqs := res.set
	if !res.status.isStored() || len(seqs.Ranges()) == 0 {
		seqs = batchSeqs(b)
	}
	s.book.BatchDone(s.intentPrefix+j.intentID, b.Len(), progress.Outcome{
		Stored: res.status.isStored(), Confirmed: res.status == jobConfirmed, Intent: res.intentKey, Seqs: seqs, First: b.First, Last: b.Last, Encoded: res.seqs})
	if res.status == jobConfirmed {
		s.m.acked.Add(float64(b.Len()))
	}
	if res.status.isStored() {
		m, name, reason := s.sn.m, s.sn.cfg.Name, string(b.Reason)
		m.Objects.WithLabelValues(name, s.cfg.Stream, reason).Inc()
		m.Bytes.WithLabelValues(name, s.cfg.Stream, reason).Add(float64(res.bytes))
		m.UploadSeconds.WithLabelValues(name, s.cfg.Stream).Observe(res.duration.Seconds())
		m.ObjectBytes.WithLabelValues(name, s.cfg.Stream).Observe(float64(res.bytes))
		if b.Newest.After(s.newest) {
			s.newest = b.Newest
		}
		if rejected {
			kind := b.Group[strings.IndexByte(b.Group, 0)+1:]
			m.Rejected.WithLabelValues(name, s.cfg.Stream, kind).Add(float64(b.Len()))
		}
	}
	switch {
	case res.err == nil:
		s.log.Info("object uploaded", "key", res.key, "messages", b.Len(), "bytes", res.bytes,
			"reason", string(b.Reason), "upload_duration", res.duration.Round(time.Millisecond))
	case res.status.isStored():
		s.log.Warn("object stored but not acked; its messages are acked when they come back",
			"key", res.key, "messages", b.Len(), "error", res.err)
	case keyError(res.err) != nil && !rejected:
		// Rejected keys are jetlake's own names, which a store takes.
		s.keyRefused(b, keyError(res.err))
	default:
		s.log.Warn("batch not exported; its messages stay unacked and are redelivered",
			"key", res.key, "messages", b.Len(), "error", res.err)
		s.awaitUnsure(j, res)
	}
}

// awaitUnsure handles a batch given up after its intent was recorded: an
// upload attempt that timed out may still have stored the object. Its
// messages, when they come back, wait until the store says whether it
// holds the object, as for an intent found at start.
func (s *streamWriter) awaitUnsure(j *job, res *result) {
	if res.intentKey == "" || len(res.seqs) == 0 {
		return
	}
	var seqs progress.Seqs
	if err := seqs.UnmarshalJSON(res.seqs); err != nil {
		return
	}
	in := &state.Intent{ID: j.intentID, Key: res.key, Stream: s.cfg.Stream, Consumer: s.cfg.Consumer, Seqs: seqs}
	s.await(res.intentKey, in, time.Now().Add(resolveAfter(s.cfg.AckWait, false)))
}

// send sends an uploader's result to the loop once its acks, if it has
// any, are done: in a goroutine of wg when ackers has room, and then at
// once; else before it returns. A stored batch's acks and their
// confirmation, a round trip to the server, so go on beside the uploader,
// up to one goroutine per uploader, while it takes the next job: the store
// has as many uploads in flight as there are uploaders, not fewer by the
// time they spend waiting on NATS. The result still reaches the loop only
// once the acks are confirmed.
func (r *runner) send(ctx context.Context, res *result, wg *sync.WaitGroup, ackers chan struct{}) {
	if res.acks == nil {
		r.wires.results <- res
		return
	}
	if r.wires.gather != nil && res.gatherable(time.Now()) {
		// The loop hears of the upload at once, so that the next batch
		// of the key may go; the results channel keeps the two in order.
		r.wires.results <- &result{job: res.job, notice: true}
		r.wires.gather <- res
		return
	}
	select {
	case ackers <- struct{}{}:
		wg.Go(func() {
			res.ack(ctx)
			<-ackers
			r.wires.results <- res
		})
	default:
		res.ack(ctx)
		r.wires.results <- res
	}
}

// startWorkers starts the uploaders, the ack gatherer and, when the
// encoder defers compression, the compressors. The function it returns
// stops them once the loop is done, and waits for them and for the work
// beside the loop.
func (r *runner) startWorkers(uctx context.Context) (stop func()) {
	var workers sync.WaitGroup
	n := uploaders(r.cfg.S3.UploadConcurrency)
	ackers := make(chan struct{}, n)
	endGather := r.gatherAcks(uctx, n)
	for range n {
		workers.Go(func() {
			for j := range r.wires.jobs {
				r.send(uctx, r.process(uctx, j), &workers, ackers)
			}
		})
	}
	var compressors sync.WaitGroup
	if cs, ok := r.enc.(formats.ChunkSource); ok {
		r.intake.chunks = cs
		r.intake.compress = make(chan *formats.Chunk, 4*runtime.GOMAXPROCS(0))
		for range runtime.GOMAXPROCS(0) {
			compressors.Go(func() {
				for c := range r.intake.compress {
					c.Compress()
				}
			})
		}
	}
	return func() {
		close(r.wires.stopping)
		close(r.wires.jobs)
		// Drain results so workers can finish, then wait for them.
		go func() {
			for range r.wires.results {
			}
		}()
		workers.Wait()
		endGather()
		close(r.wires.results)
		r.chores.bg.Wait()
		if r.intake.compress != nil {
			close(r.intake.compress)
			compressors.Wait()
		}
	}
}

// process runs one job. The result of a stored batch may still have its
// acks to run (result.acks); one that is not stored says why in its
// status.
func (e *session) process(ctx context.Context, j *job) *result {
	var res *result
	if j.marker != nil {
		res = e.writeMarker(ctx, j)
	} else {
		res = e.storeBatch(ctx, j)
	}
	if !res.status.isStored() {
		res.status = notStored(res.err)
	}
	return res
}
