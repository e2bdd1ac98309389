package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/pathtemplate"
)

// bulkStore is a state store that writes many keys in one go, with many
// writes in flight (state.KV). One at a time, each intent written and
// deleted costs the server a read, a disk write and a reply: for small
// objects, most of its CPU.
type bulkStore interface {
	CreateAll(ctx context.Context, entries map[string][]byte) map[string]error
	DeleteAll(ctx context.Context, keys []string) map[string]error
}

// intentsAheadMax bounds the intents one run of intentsAheadChore writes.
const intentsAheadMax = 4096

// isData reports whether j's batch is of data, stored where the sink
// says, not of rejected messages, which are plain objects.
func (e *session) isData(j *job) bool { return j.set != nil && j.enc == e.enc }

// objectKey returns the key of j's object. A key no store takes is an
// *objstore.KeyError: its messages are rejected (keyRefused).
func (e *session) objectKey(j *job) (string, error) {
	b, prefix := j.batch, e.cfg.S3.Prefix
	if e.isData(j) {
		prefix = e.sink.keyPrefix()
	}
	key, err := pathtemplate.Key(prefix, b.Dir, b.First, b.Last, j.enc.Ext())
	if err != nil {
		long := string(pathtemplate.AppendKey(nil, prefix, []byte(b.Dir), b.First, b.Last, j.enc.Ext()))
		return "", &objstore.KeyError{Key: long, Err: err}
	}
	return key, nil
}

// intentOf returns the intent of j's batch, stored at key.
func intentOf(j *job, key string) state.Intent {
	st := j.stream
	return state.Intent{
		ID:            j.intentID,
		Key:           key,
		Stream:        st.cfg.Stream,
		StreamCreated: st.created,
		Consumer:      st.cfg.Consumer,
		Seqs:          batchSeqs(j.batch),
		Created:       time.Now().UTC(),
	}
}

// takeIntentsAhead takes up to n queued batches whose intents are not
// written, for their intents to be written in one go, and returns them
// with the intents by key.
func (r *runner) takeIntentsAhead(n int) ([]*job, map[string][]byte) {
	var jobs []*job
	entries := map[string][]byte{}
	for _, j := range r.up.queue {
		if len(jobs) == n {
			break
		}
		if !waitsForIntent(j) {
			continue
		}
		j.intentAhead = true
		key, err := r.objectKey(j)
		if err != nil {
			continue // the uploader rejects its messages
		}
		in := intentOf(j, key)
		value, err := json.Marshal(&in)
		if err != nil {
			continue
		}
		jobs = append(jobs, j)
		entries[j.stream.intentPrefix+j.intentID] = value
	}
	return jobs, entries
}

// intentsWritten records which of jobs have their intents written: the
// uploader of any other writes its own.
func (r *runner) intentsWritten(jobs []*job, failed map[string]error) {
	var first error
	n := 0
	for _, j := range jobs {
		err := failed[j.stream.intentPrefix+j.intentID]
		if err == nil || errors.Is(err, jetstream.ErrKeyExists) {
			j.intentWritten.Store(true)
			continue
		}
		if n++; first == nil {
			first = err
		}
	}
	if n > 0 {
		r.log.Debug("intents not written ahead; their uploaders write them", "batches", n, "error", first)
	}
}

// intentsAheadChore writes, beside the loop and in one go, the intents of
// batches waiting for an uploader, when the state store writes many at
// once: a rotation that seals thousands of small batches at a time would
// otherwise write them one by one. An uploader that takes a batch before
// its intent is written writes it itself (a write that finds it there
// counts): the intent is stored before the object either way.
func (r *runner) intentsAheadChore() *chore {
	bulk, ok := r.intents.(bulkStore)
	if !ok {
		return nil
	}
	c := &chore{name: "intents ahead", queue: true}
	c.due = func(_ time.Time, final bool) bool { return !final && r.intentsBehind() }
	c.start = func(time.Time) choreWork {
		jobs, entries := r.takeIntentsAhead(intentsAheadMax)
		return func(ctx context.Context) (func(), error) {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			failed := bulk.CreateAll(wctx, entries)
			return func() { r.intentsWritten(jobs, failed) }, nil
		}
	}
	return c
}

// intentsBehind reports whether a queued batch waits for its intent to be
// written ahead.
func (r *runner) intentsBehind() bool {
	return slices.ContainsFunc(r.up.queue, waitsForIntent)
}

// waitsForIntent reports whether j is a batch no uploader has, whose
// intent nobody writes yet.
func waitsForIntent(j *job) bool { return j.batch != nil && !j.uploading && !j.intentAhead }

// writeIntentsAhead writes the intents of every queued batch, in one go
// per intentsAheadMax, on the way out: the loop that starts chores has
// ended, and a final rotation queues a batch per open buffer.
func (r *runner) writeIntentsAhead(ctx context.Context) {
	bulk, ok := r.intents.(bulkStore)
	if !ok {
		return
	}
	for {
		jobs, entries := r.takeIntentsAhead(intentsAheadMax)
		if len(jobs) == 0 {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		failed := bulk.CreateAll(wctx, entries)
		cancel()
		r.intentsWritten(jobs, failed)
	}
}

// forgetIntentsAhead deletes the intents written ahead for batches no
// uploader took, when the runner leaves them: no object of theirs was
// ever sent, and the next start need not wait to find none.
func (r *runner) forgetIntentsAhead(ctx context.Context) {
	var keys []string
	for _, j := range r.up.queue {
		if j.batch != nil && !j.uploading && j.intentWritten.Load() {
			keys = append(keys, j.stream.intentPrefix+j.intentID)
		}
	}
	if len(keys) > 0 {
		r.deleteIntents(context.WithoutCancel(ctx), keys)
	}
}
