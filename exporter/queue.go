package exporter

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
)

// batchSet is a set of buffers the exporter fills, and msgBatch one of its
// batches: records encoded by the connector's formats.Encoder, of messages
// acked through their ackRef.
type (
	batchSet = buffer.Set[jsclient.AckRef, formats.Record, formats.Batch]
	msgBatch = buffer.Batch[jsclient.AckRef, formats.Batch]
)

// nextJob returns the index in the queue of the job to upload next: the
// oldest whose buffer key has no batch being uploaded, so that the objects
// of one key are stored in the order they were sealed. It returns -1 when
// there is none.
func (r *runner) nextJob() int {
	full := r.up.large >= r.cfg.S3.UploadConcurrency
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
		if j.batch == nil || j.stream.mode.AckLess || !queuedRenewDue(j.progress, now, j.stream.cfg.AckWait) {
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
			if err := it.Handle.InProgress(r.acks); err != nil {
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
		err := last.ConfirmInProgress(ctx, r.acks)
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
		enc, format := r.enc, string(r.cfg.Output.Format)
		if set == r.rej {
			enc, format = r.rejEnc, string(formats.JSONLines)
		}
		for _, b := range set.TakeSealed() {
			s := r.streamOf(b)
			j := &job{batch: b, size: int64(b.Body.MemSize() + b.Overhead() + jobOverhead), stream: s, set: set, enc: enc, format: format,
				intentID: nuid.Next(), progress: b.Opened, pin: s.fence.pin}
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
func (r *runner) streamOf(b *msgBatch) *streamWriter {
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
