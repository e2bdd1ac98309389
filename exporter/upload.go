package exporter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/fault"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/pathtemplate"
)

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
	c := &batchSteps{e: e, stream: j.stream.cfg.Stream, key: res.key, ackWait: j.stream.cfg.AckWait, progress: time.Now()}
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
	prefix := e.cfg.S3.Prefix
	data := j.set != nil && j.enc == e.enc // not rejected messages: they are plain objects
	if data {
		prefix, res.tail = e.sink.place(body)
	}
	res.key, err = pathtemplate.Key(prefix, b.Dir, b.First, b.Last, j.enc.Ext())
	if err != nil {
		// No store takes it: its messages are rejected (keyRefused).
		long := string(pathtemplate.AppendKey(nil, prefix, []byte(b.Dir), b.First, b.Last, j.enc.Ext()))
		res.err = &objstore.KeyError{Key: long, Err: err}
		return res
	}
	st := j.stream
	in := state.Intent{
		ID:            j.intentID,
		Key:           res.key,
		Stream:        st.cfg.Stream,
		StreamCreated: st.created,
		Consumer:      st.cfg.Consumer,
		Seqs:          batchSeqs(b),
		Created:       time.Now().UTC(),
	}
	opts := e.batchPut(j, &in, data)
	res.set = in.Seqs
	if enc, err := in.Seqs.MarshalJSON(); err == nil {
		res.seqs = enc
		objstore.SetSeqs(opts.Metadata, enc)
	}
	c := &batchSteps{e: e, stream: st.cfg.Stream, b: b, ackWait: st.cfg.AckWait, progress: time.Unix(0, j.confirmed.Load()), key: res.key}
	start := time.Now()

	if e.intents != nil {
		res.intentKey = st.intentPrefix + in.ID
		if res.err = e.recordIntent(ctx, c, res.intentKey, &in); res.err != nil {
			return res
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
		if !time.Now().Before(uploadRenewAt(c.progress, c.ackWait)) {
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
