package exporter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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

// The commit unit: a sealed batch (or loss marker) as a job, the uploaders
// that store it (intent, object, fence), the acks that follow, and the
// result the loop applies, which says where the job ended in one status.
// The acks of small batches may wait to go with others (ackgather.go); the
// order in which jobs reach the uploaders is queue.go's.

// job is a sealed batch, or a loss marker, on its way to the store.
type job struct {
	stream   *streamWriter // uploaders read only cfg, created and intentPrefix
	batch    *msgBatch
	size     int64           // memory the batch holds, counted in the budget
	set      *batchSet       // the set the batch returns to
	enc      formats.Encoder // the batch's encoder
	format   string          // and its format's name
	intentID string          // id of the batch's intent
	// intentAhead: the loop took the job to write its intent before an
	// uploader has it (intentsAhead); intentWritten: that write is done,
	// and the uploader writes none.
	intentAhead   bool
	intentWritten atomic.Bool
	pin           string // the pin id of a pinned consumer when the batch was sealed: its store is fenced by it
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

// ErrAbandoned is the result of a batch whose messages' AckWait passed before
// it was stored and acked: JetStream has redelivered them or will, so the
// batch is never acked.
var ErrAbandoned = errors.New("AckWait passed before the batch was committed")

// writeMarker stores a loss marker, then terminates the poison message it
// records, if any. A marker's key is a function of its content, so writing
// it twice is harmless.
func (e *session) writeMarker(ctx context.Context, j *job) *result {
	m := j.marker
	m.DetectedAt = time.Now().UTC()
	m.ExporterVersion = e.opts.Version
	res := &result{job: j, key: m.Key(e.cfg.S3.Prefix)}
	body, err := m.Encode()
	if err != nil {
		res.err = err
		return res
	}
	e.log.Warn("messages lost", "stream", m.Stream, "consumer", m.Consumer, "subject", m.Subject,
		"first_seq", m.FirstSeq, "last_seq", m.LastSeq, "count", m.Count, "reason", string(m.Reason), "error", m.Error, "marker", res.key)
	c := &batchSteps{e: e, stream: j.stream.cfg.Stream, key: res.key, ackWait: j.stream.cfg.AckWait, progress: time.Now(), ackLess: j.stream.mode.AckLess}
	c.msgs = j.term
	// Written like data: conditionally, and what is found at the key is
	// checked, so that a marker of another connector sharing the prefix is
	// never overwritten.
	opts := objstore.PutOptions{
		ContentType: "application/json",
		Metadata:    map[string]string{objstore.MetaStream: m.Stream, objstore.MetaConsumer: m.Consumer},
		IfNoneMatch: e.conditional,
	}
	if res.err = c.do(ctx, "write loss marker", func(ctx context.Context) error {
		return objstore.PutOnce(ctx, e.store, res.key, formats.NewBody(body), opts, objstore.MarkerOf(m.Stream, m.Consumer))
	}); res.err != nil {
		return res
	}
	res.status = jobStored
	if c.ackLess {
		return res // nothing to terminate: the record holds the marker's sequences
	}
	nc := e.acks
	for _, ref := range j.term {
		if err := ref.Term(nc, "jetlake: "+m.Error); err != nil {
			e.log.Warn("terminating a poison message failed; it will come back and be recorded again", "error", err)
		}
	}
	return res
}

// storeBatch commits one batch: encode it, record an intent, store the object
// with a conditional write, ack every message, confirm, forget the intent.
// It returns once the object is stored, with the acks and the confirmation
// left in result.acks, which must run before the result is used.
// Every step retries until it succeeds, fails for good, ctx ends or the
// messages' AckWait passes; meanwhile InProgress keeps them from being
// redelivered. A crash at any point leaves either no object (the messages
// come back and are batched anew) or an object and its intent (recovery
// acks the messages without writing them again).
func (e *session) storeBatch(ctx context.Context, j *job) *result {
	b := j.batch
	res := &result{job: j}
	body, err := e.encodeBody(b.Body, j.format == string(formats.Parquet))
	if err != nil {
		res.err = fmt.Errorf("encode batch %d-%d: %w", b.First, b.Last, err)
		return res
	}
	res.bytes = int(body.Len())
	data := e.isData(j)
	if data {
		res.tail = e.sink.tail(body)
	}
	if res.key, res.err = e.objectKey(j); res.err != nil {
		return res
	}
	st := j.stream
	in := intentOf(j, res.key)
	opts := e.batchPut(j, &in, data)
	res.set = in.Seqs
	if enc, err := in.Seqs.MarshalJSON(); err == nil {
		res.seqs = enc
		objstore.SetSeqs(opts.Metadata, enc)
	}
	c := &batchSteps{e: e, stream: st.cfg.Stream, b: b, ackWait: st.cfg.AckWait, progress: time.Unix(0, j.confirmed.Load()), key: res.key,
		ackLess: st.mode.AckLess}
	start := time.Now()

	if e.intents != nil {
		res.intentKey = st.intentPrefix + in.ID
		if !j.intentWritten.Load() {
			if res.err = e.recordIntent(ctx, c, res.intentKey, &in); res.err != nil {
				return res
			}
		}
	}
	fault.Point("before-upload")
	if res.err = c.do(ctx, "upload", func(ctx context.Context) error {
		fault.Soon("during-upload", time.Millisecond)
		// In the attempt, after the intent: an instance pinned after the
		// check finds the intent, and waits for the attempt to end.
		if err := st.checkPin(ctx, j.pin); err != nil {
			return err
		}
		return objstore.PutOnce(ctx, e.store, res.key, body, opts, objstore.WrittenBy(in.ID))
	}); res.err != nil {
		if errors.Is(res.err, errFenced) && res.intentKey != "" {
			e.forgetFenced(ctx, res, in.ID)
		}
		if keyError(res.err) != nil {
			e.forgetRefused(ctx, res)
		}
		return res
	}
	res.status = jobStored
	fault.Point("after-upload")
	res.duration = time.Since(start)
	if c.ackLess {
		// No acks: the batch is committed once stored, and the export
		// record says so from its next write on.
		fault.Point("after-acks")
		res.acked(e.log, nil)
		return res
	}
	// Acking after AckWait would ack copies that may already be on their
	// way to another exporter.
	if res.ackBy = c.ownedUntil(); !time.Now().Before(res.ackBy) {
		res.err = ErrAbandoned
		return res
	}
	res.acks = func(ctx context.Context) { res.acked(e.log, e.ack(ctx, b)) }
	return res
}

// batchPut returns the options of a batch's PUT: its content type, the
// metadata that says which sequences it holds and who wrote it (for a
// table's data file, the connector and the table's UUID too), and the
// conditional write when the store has it.
func (e *session) batchPut(j *job, in *state.Intent, data bool) objstore.PutOptions {
	b, st := j.batch, j.stream
	opts := objstore.PutOptions{
		ContentType: j.enc.ContentType(),
		Metadata: map[string]string{
			objstore.MetaFirstSeq:      strconv.FormatUint(b.First, 10),
			objstore.MetaLastSeq:       strconv.FormatUint(b.Last, 10),
			objstore.MetaCount:         strconv.Itoa(b.Len()),
			objstore.MetaFormat:        j.format,
			objstore.MetaStream:        st.cfg.Stream,
			objstore.MetaStreamCreated: st.created.Format(time.RFC3339Nano),
			objstore.MetaConsumer:      st.cfg.Consumer,
			objstore.MetaIntent:        in.ID,
			objstore.MetaVersion:       e.opts.Version,
		},
		IfNoneMatch: e.conditional,
	}
	if data {
		e.sink.label(opts.Metadata)
	}
	if slices.IsSortedFunc(b.Items, func(x, y buffer.Item[jsclient.AckRef]) int { return cmp.Compare(x.Seq, y.Seq) }) {
		opts.Metadata[objstore.MetaOrdered] = "true"
	}
	return opts
}

// recordIntent writes a batch's intent under ikey before its upload,
// retried by c; an earlier attempt's intent that got through counts.
func (e *session) recordIntent(ctx context.Context, c *batchSteps, ikey string, in *state.Intent) error {
	value, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(ctx, "record intent", func(ctx context.Context) error {
		err := e.intents.Create(ctx, ikey, value)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil // an earlier attempt got through
		}
		return err
	})
}

// encodeBody encodes a batch's object. Parquet batches are encoded one at a
// time: the writer holds about as much again as the batch's column values
// while it encodes them, outside the budget, and uploaders encoding four
// files at once took the process 30 MiB past its memory bound; the two
// cores are the bound of encoding anyway.
func (e *session) encodeBody(b formats.Batch, parquet bool) (formats.Body, error) {
	if parquet {
		e.encoding.Lock()
		defer e.encoding.Unlock()
	}
	return b.Finish()
}

// batchSteps runs the steps of one batch's commit with retries, keeping the
// batch's messages in progress.
type batchSteps struct {
	e       *session
	stream  string
	b       *msgBatch         // messages to keep in progress, or
	msgs    []jsclient.AckRef // these
	key     string
	ackWait time.Duration
	// progress is a time at or before which the server last (re)started
	// the AckWait clock of every message, as far as this process knows for
	// sure: the batch's first delivery, or an InProgress the server
	// answered. Until progress + AckWait the server redelivers none of
	// them to anyone else.
	progress time.Time
	// ackLess: the messages are of a consumer that takes no acks, which
	// never redelivers them: nothing to keep in progress, and no AckWait
	// after which the batch must be given up. An attempt still lasts at
	// most attemptTimeout(ackWait), which a takeover waits out (see
	// resolveAfter).
	ackLess bool
}

// ownedUntil is how long the batch's messages are surely not redelivered
// (see the ownership clock).
func (c *batchSteps) ownedUntil() time.Time { return ownedUntil(c.progress, c.ackWait) }

// do runs step until it succeeds. Every attempt ends before the messages
// could be redelivered, so that a step never lands (an object stored, an
// ack sent) once another consumer may hold the same messages, as it could
// for an instance whose link to NATS froze while a standby took over. It
// keeps the messages in progress, with InProgress the server confirms, and
// returns ErrAbandoned once it cannot: the AckWait is (nearly) spent. It
// returns a *failure.Permanent, *CollisionError or *KeyError (a key the store
// refuses is refused again) at once, and ctx's error when ctx ends.
func (c *batchSteps) do(ctx context.Context, what string, step func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		if c.ackLess {
			// Owned as long as the fence says so: renewed at every attempt.
			c.progress = time.Now()
		} else if !time.Now().Before(uploadRenewAt(c.progress, c.ackWait)) {
			// An answer counts only for InProgress sent while the messages
			// were surely held: after that they may be redelivered already.
			if sent, ok := c.inProgress(ctx); ok && sent.Before(c.ownedUntil()) {
				c.progress = sent
			}
		}
		left := time.Until(c.ownedUntil())
		if tooLittleLeft(left, c.ackWait) {
			c.e.m.UploadErrors.WithLabelValues(c.e.cfg.Name, c.stream, "abandoned").Inc()
			return ErrAbandoned
		}
		actx, cancel := context.WithTimeout(ctx, min(attemptTimeout(c.ackWait), left))
		err := step(actx)
		cancel()
		if err == nil {
			c.e.uploadSucceeded()
			return nil
		}
		c.e.uploadFailed()
		c.e.m.UploadErrors.WithLabelValues(c.e.cfg.Name, c.stream, errorKind(err)).Inc()
		if permanent(err) || errors.Is(err, errFenced) || keyError(err) != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := backoff(attempt)
		if until := time.Until(uploadRenewAt(c.progress, c.ackWait)); until < wait {
			wait = max(until, 0)
		}
		c.e.log.Warn(what+" failed; retrying", "key", c.key, "attempt", attempt+1, "retry_in", wait.Round(time.Millisecond), "error", err)
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// inProgressTimeout bounds the wait for the server's answer to the last
// InProgress of a batch.
const inProgressTimeout = 2 * time.Second

// inProgress tells the server that the messages are being worked on,
// restarting their AckWait clocks, and waits for the server to answer the
// last of them, which it does once it has processed every one sent before
// on the same connection. It returns when the first was sent and whether
// the server answered: only then are the clocks known to have restarted.
func (c *batchSteps) inProgress(ctx context.Context) (time.Time, bool) {
	refs := c.msgs
	if c.b != nil {
		refs = make([]jsclient.AckRef, len(c.b.Items))
		for i, it := range c.b.Items {
			refs[i] = it.Handle
		}
	}
	sent := time.Now()
	if len(refs) == 0 {
		return sent, true
	}
	nc := c.e.acks
	ok := true
	for _, ref := range refs[:len(refs)-1] {
		if err := ref.InProgress(nc); err != nil {
			ok = false
		}
	}
	wctx, cancel := context.WithTimeout(ctx, min(inProgressTimeout, max(time.Until(c.ownedUntil()), 0)))
	defer cancel()
	return sent, refs[len(refs)-1].ConfirmInProgress(wctx, nc) == nil && ok
}

// ack acks every message of a stored batch and confirms: the last ack waits
// for the server's reply, which arrives after the earlier acks sent on the
// same connection were processed.
func (e *session) ack(ctx context.Context, b *msgBatch) error {
	return e.ackBatches(ctx, []*msgBatch{b})
}

// ackBatches acks every message of stored batches of one consumer, in
// order, and confirms the last ack, which the server answers after the
// earlier ones sent on the same connection.
func (e *session) ackBatches(ctx context.Context, batches []*msgBatch) error {
	nc := e.acks
	var firstErr error
	lastBatch := batches[len(batches)-1]
	last := lastBatch.Items[len(lastBatch.Items)-1]
	for _, b := range batches {
		items := b.Items
		if b == lastBatch {
			items = items[:len(items)-1]
		}
		for _, it := range items {
			if err := it.Handle.Ack(nc); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("ack sequence %d: %w", it.Seq, err)
			}
		}
	}
	if fault.At("after-acks") {
		// Make sure the acks left before the crash; the point counts
		// batches.
		if err := last.Handle.Ack(nc); err == nil {
			for range batches {
				fault.Point("after-acks")
			}
		}
	}
	for attempt := 0; attempt < 3; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := last.Handle.ConfirmAck(actx, nc)
		cancel()
		if err == nil {
			return firstErr
		}
		if attempt == 2 || ctx.Err() != nil {
			return errors.Join(firstErr, fmt.Errorf("confirm ack of sequence %d: %w", last.Seq, err))
		}
	}
	return firstErr
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

// finish accounts for a job that ended, one way or another, or, for a
// notice of a stored batch whose acks wait (see runner.send), for the end
// of its upload: the runner's memory, uploads and sink, then the writer's
// book, whose export record is written at once when it is due.
func (r *runner) finish(ctx context.Context, res *result) error {
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
		if !res.status.isStored() && len(j.term) > 0 {
			s.rewindAfter(ctx, "the loss marker of poison messages was not stored", 0)
		}
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
	if !res.status.isStored() {
		s.rewindAfter(ctx, "a batch was not stored", 0)
	}
	r.tryChore(ctx, s.chores.save, time.Now())
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
