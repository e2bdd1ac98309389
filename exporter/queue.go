package exporter

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nuid"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/fault"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/lossmarker"
)

// batchSet is a set of buffers the exporter fills, and msgBatch one of its
// batches: records encoded by the connector's formats.Encoder, of messages
// acked through their ackRef.
type (
	batchSet = buffer.Set[jsclient.AckRef, formats.Record, formats.Batch]
	msgBatch = buffer.Batch[jsclient.AckRef, formats.Batch]
)

// job is a sealed batch, or a loss marker, on its way to the store.
type job struct {
	stream   *streamState // uploaders read only cfg, created and intentPrefix
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
	err       error
	stored    bool          // the object is in the store
	confirmed bool          // the acks were sent and the last one confirmed
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
	res.confirmed = true
	fault.Point("after-confirm") // the point counts batches
}

// nextJob returns the index in the queue of the job to upload next: the
// oldest whose buffer key has no batch being uploaded, so that the objects
// of one key are stored in the order they were sealed. It returns -1 when
// there is none.
func (r *runner) nextJob() int {
	full := r.up.large >= r.e.cfg.S3.UploadConcurrency
	for i, j := range r.up.queue {
		if j.batch == nil || r.up.uploading[j.key()] == 0 && !(full && j.size > smallUpload) {
			return i
		}
	}
	return -1
}

// Uploads: upload_concurrency large ones at once, and small ones (a request
// each, whose cost is the store's per request rather than per byte) up to
// smallUploads times as many in all, within the memory budget.
const (
	smallUpload  = 1 << 20
	smallUploads = objstore.SmallUploadsPerSlot
)

// uploaders is how many uploads may be in flight at once.
func uploaders(uploadConcurrency int) int { return smallUploads * uploadConcurrency }

// keepQueuedInProgress sends InProgress for the messages of sealed batches
// waiting in the queue, behind an upload of their key that retries or for
// a free uploader, once a third of their AckWait has passed since the last
// time, so that the server does not redeliver what jetlake holds. The
// uploader does the same for the batch it uploads.
//
// The InProgress signals go out without waiting. One request beside the
// loop then asks the server to answer, which it does once it has processed
// every signal sent before on the connection; only then do the batches
// count as confirmed. A round waits for the answer to the one before, so
// that a link that stopped answering confirms nothing.
func (r *runner) keepQueuedInProgress(now time.Time) {
	if r.up.confirming {
		return
	}
	var due []*job
	for _, j := range r.up.queue {
		if j.batch == nil || !queuedRenewDue(j.progress, now, j.stream.cfg.AckWait) {
			continue
		}
		if !now.Before(j.ownedUntil()) {
			// The server may have redelivered the messages by now: an
			// answer would prove nothing, and the uploader gives the batch
			// up.
			continue
		}
		due = append(due, j)
	}
	if len(due) == 0 {
		return
	}
	// The round's last message gets its InProgress from the request that
	// asks for the answer.
	items := due[len(due)-1].batch.Items
	last := items[len(items)-1].Handle
	sent := due[:0]
	for _, j := range due {
		ok := true
		for _, it := range j.batch.Items {
			if it.Handle == last {
				continue
			}
			if err := it.Handle.InProgress(r.e.acks); err != nil {
				ok = false
			}
		}
		if ok {
			j.progress = now
			sent = append(sent, j)
		}
	}
	due = sent
	r.up.confirming = true
	r.beside(func() func() {
		ctx, cancel := context.WithTimeout(context.Background(), inProgressTimeout)
		err := last.ConfirmInProgress(ctx, r.e.acks)
		cancel()
		return func() {
			r.up.confirming = false
			if err != nil {
				return
			}
			for _, j := range due {
				j.confirmAt(now)
			}
		}
	})
}

// ownedUntil is how long the job's messages are surely not redelivered;
// see batchSteps.ownedUntil.
func (j *job) ownedUntil() time.Time {
	return ownedUntil(time.Unix(0, j.confirmed.Load()), j.stream.cfg.AckWait)
}

// confirmAt records that the server restarted the AckWait clocks of the
// job's messages at t or later. The caller sent InProgress at t, before
// ownedUntil: an answer to one sent later proves nothing, since the
// messages may have been redelivered in between.
func (j *job) confirmAt(t time.Time) {
	for {
		old := j.confirmed.Load()
		if old >= t.UnixNano() || j.confirmed.CompareAndSwap(old, t.UnixNano()) {
			return
		}
	}
}

// offer returns what the loop offers the uploaders: their channel, the
// next job and its index in the queue; a nil channel, which never takes,
// when no job can go now.
func (r *runner) offer() (chan *job, *job, int) {
	idx := r.nextJob()
	if idx < 0 {
		return nil, nil, idx
	}
	return r.wires.jobs, r.up.queue[idx], idx
}

// dispatched takes the job at index i, handed to an uploader, off the
// queue.
func (r *runner) dispatched(i int) {
	if j := r.up.queue[i]; j.batch != nil {
		r.up.uploading[j.key()]++
		j.uploading = true
		if j.size > smallUpload {
			j.large = true
			r.up.large++
		}
	}
	if i == 0 {
		r.up.queue[0] = nil // the array must not keep the job alive
		r.up.queue = r.up.queue[1:]
		return
	}
	n := copy(r.up.queue[i:], r.up.queue[i+1:])
	r.up.queue[i+n] = nil
	r.up.queue = r.up.queue[:i+n]
}

// enqueue hands a job to the uploaders.
func (r *runner) enqueue(j *job) {
	if j.stream != nil {
		j.stream.jobs++
	}
	r.up.inflight++
	r.up.inflightBytes += j.size
	r.up.queue = append(r.up.queue, j)
}

// takeSealed queues the batches the buffer set sealed.
func (r *runner) takeSealed() {
	for _, set := range []*batchSet{r.set, r.rej} {
		enc, format := r.e.enc, string(r.e.cfg.Output.Format)
		if set == r.rej {
			enc, format = r.e.rejEnc, string(formats.JSONLines)
		}
		for _, b := range set.TakeSealed() {
			s := r.streamOf(b)
			j := &job{batch: b, size: int64(b.Body.MemSize() + b.Overhead() + jobOverhead), stream: s, set: set, enc: enc, format: format,
				intentID: nuid.Next(), progress: b.Opened, pin: s.pin}
			j.confirmAt(b.Opened)
			j.stream.book.Seal(j.stream.intentPrefix+j.intentID, b.Len())
			r.enqueue(j)
		}
	}
}

// batchSeqs returns the sequences of a batch's messages.
func batchSeqs(b *msgBatch) progress.Seqs {
	return progress.SeqsInOrder(len(b.Items), func(i int) uint64 { return b.Items[i].Seq })
}

// streamOf returns the stream a batch belongs to, from the index its group
// starts with.
func (r *runner) streamOf(b *msgBatch) *streamState {
	idx, _, _ := strings.Cut(b.Group, "\x00")
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 || i >= len(r.streams) {
		panic("exporter: batch of unknown stream " + idx)
	}
	return r.streams[i]
}

// uploaded accounts for the end of a job's upload, once: the next batch
// of its buffer key may go.
func (r *runner) uploaded(j *job) {
	if j.large {
		j.large = false
		r.up.large--
	}
	if j.uploading {
		j.uploading = false
		if k := j.key(); r.up.uploading[k] == 1 {
			delete(r.up.uploading, k)
		} else {
			r.up.uploading[k]--
		}
	}
}

// finish accounts for a job that ended, one way or another, or, for a
// notice of a stored batch whose acks wait (see runner.send), for the end
// of its upload.
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
		var term []uint64
		for _, ref := range j.term {
			term = append(term, ref.Seq())
		}
		s.book.MarkerDone(j.marker.Runs(), term, res.stored)
		if res.stored {
			r.e.m.Lost.WithLabelValues(r.e.cfg.Name, s.cfg.Stream, string(j.marker.Reason)).Add(float64(j.marker.Count))
		}
		return nil
	}
	b := j.batch
	defer j.set.Release(b)
	for _, it := range b.Items {
		s.book.Release(it.Seq)
		r.mem.heldMem -= it.Handle.Mem()
	}
	if res.stored && j.set == r.set && r.e.table != nil && res.intentKey != "" {
		r.e.table.files.Stored(res.intentKey, res.key, b.First, b.Last, res.tail)
	}
	seqs := res.set
	if !res.stored || len(seqs.Ranges()) == 0 {
		seqs = batchSeqs(b)
	}
	s.book.BatchDone(s.intentPrefix+j.intentID, b.Len(), progress.Outcome{
		Stored: res.stored, Confirmed: res.confirmed, Intent: res.intentKey, Seqs: seqs, First: b.First, Last: b.Last, Encoded: res.seqs})
	if res.confirmed {
		s.m.acked.Add(float64(b.Len()))
	}
	if res.stored {
		r.up.written += int64(b.Len())
		m, name, reason := r.e.m, r.e.cfg.Name, string(b.Reason)
		m.Objects.WithLabelValues(name, s.cfg.Stream, reason).Inc()
		m.Bytes.WithLabelValues(name, s.cfg.Stream, reason).Add(float64(res.bytes))
		m.UploadSeconds.WithLabelValues(name, s.cfg.Stream).Observe(res.duration.Seconds())
		m.ObjectBytes.WithLabelValues(name, s.cfg.Stream).Observe(float64(res.bytes))
		if b.Newest.After(s.newest) {
			s.newest = b.Newest
		}
	}
	if j.set == r.rej && res.stored {
		kind := b.Group[strings.IndexByte(b.Group, 0)+1:]
		r.e.m.Rejected.WithLabelValues(r.e.cfg.Name, s.cfg.Stream, kind).Add(float64(b.Len()))
	}
	switch {
	case res.err == nil:
		r.log.Info("object uploaded", "key", res.key, "messages", b.Len(), "bytes", res.bytes,
			"reason", string(b.Reason), "upload_duration", res.duration.Round(time.Millisecond))
	case res.stored:
		r.log.Warn("object stored but not acked; its messages are acked when they come back",
			"key", res.key, "messages", b.Len(), "error", res.err)
	case keyError(res.err) != nil && j.set == r.set:
		// Rejected keys are jetlake's own names, which a store takes.
		r.keyRefused(s, b, keyError(res.err))
	default:
		r.log.Warn("batch not exported; its messages stay unacked and are redelivered",
			"key", res.key, "messages", b.Len(), "error", res.err)
		r.awaitUnsure(s, j, res)
	}
	return nil
}

// awaitUnsure handles a batch given up after its intent was recorded: an
// upload attempt that timed out may still have stored the object. Its
// messages, when they come back, wait until the store says whether it
// holds the object, as for an intent found at start.
func (r *runner) awaitUnsure(s *streamState, j *job, res *result) {
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
