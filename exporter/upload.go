package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Object metadata written on every data object (x-amz-meta-*).
const (
	MetaFirstSeq = "Jetlake-First-Seq"
	MetaLastSeq  = "Jetlake-Last-Seq"
	MetaCount    = "Jetlake-Count"
	MetaFormat   = "Jetlake-Format"
	MetaStream   = "Jetlake-Stream"
	MetaVersion  = "Jetlake-Version"
)

// ErrAbandoned is the result of a batch whose messages' AckWait passed before
// it was stored and acked: JetStream has redelivered them or will, so the
// batch is never acked.
var ErrAbandoned = errors.New("AckWait passed before the batch was committed")

// job is a sealed batch on its way to the store.
type job struct {
	batch  *buffer.Batch[jetstream.Msg]
	size   int64        // batch size when sealed, counted in the memory budget
	stream *streamState // only its immutable cfg is read off the runner goroutine
}

// result is what an uploader reports about a job.
type result struct {
	job      *job
	key      string
	bytes    int
	duration time.Duration
	err      error
}

// upload commits one batch: encode, store (retrying until it succeeds, the
// error is permanent, ctx ends or the messages' AckWait passes), then ack.
// While it retries it keeps the messages from being redelivered with
// InProgress.
func (e *Exporter) upload(ctx context.Context, j *job) *result {
	b := j.batch
	res := &result{job: j}
	body, err := b.Body.Finish()
	if err != nil {
		res.err = fmt.Errorf("encode batch %d-%d: %w", b.First, b.Last, err)
		return res
	}
	res.bytes = len(body)
	res.key, err = pathtemplate.Key(e.cfg.S3.Prefix, b.Dir, b.First, b.Last, e.enc.Ext())
	if err != nil {
		res.err = err
		return res
	}
	opts := PutOptions{
		ContentType: e.enc.ContentType(),
		Metadata: map[string]string{
			MetaFirstSeq: strconv.FormatUint(b.First, 10),
			MetaLastSeq:  strconv.FormatUint(b.Last, 10),
			MetaCount:    strconv.Itoa(b.Len()),
			MetaFormat:   e.cfg.Output.Format,
			MetaStream:   j.stream.cfg.Stream,
			MetaVersion:  e.opts.Version,
		},
	}
	ackWait := j.stream.cfg.AckWait
	// progress approximates when the server last (re)started the AckWait
	// clock of the batch's oldest message.
	progress := b.Opened
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if since := time.Since(progress); since >= ackWait*2/3 {
			if since >= ackWait {
				res.err = ErrAbandoned
				return res
			}
			if inProgress(b) {
				progress = time.Now()
			}
		}
		actx, cancel := context.WithTimeout(ctx, attemptTimeout(ackWait))
		err := e.store.Put(actx, res.key, body, opts)
		cancel()
		if err == nil {
			break
		}
		if IsPermanent(err) || ctx.Err() != nil {
			res.err = err
			return res
		}
		wait := backoff(attempt)
		if until := time.Until(progress.Add(ackWait * 2 / 3)); until < wait {
			wait = max(until, 0)
		}
		e.log.Warn("upload failed; retrying", "key", res.key, "attempt", attempt+1, "retry_in", wait.Round(time.Millisecond), "error", err)
		if !sleep(ctx, wait) {
			res.err = ctx.Err()
			return res
		}
	}
	res.duration = time.Since(start)
	// Acking after AckWait would ack copies that may already be on their
	// way to another exporter.
	if time.Since(progress) >= ackWait {
		res.err = ErrAbandoned
		return res
	}
	if err := e.ack(ctx, b); err != nil {
		e.log.Warn("object stored but acks failed; its messages will be redelivered and exported again",
			"key", res.key, "error", err)
	}
	return res
}

// inProgress tells the server that the batch's messages are being worked on,
// restarting their AckWait clocks. It reports whether every signal was sent.
func inProgress(b *buffer.Batch[jetstream.Msg]) bool {
	ok := true
	for _, it := range b.Items {
		if err := it.Handle.InProgress(); err != nil {
			ok = false
		}
	}
	return ok
}

// ack acks every message of a stored batch and confirms: the last ack waits
// for the server's reply, which arrives after the earlier acks sent on the
// same connection were processed.
func (e *Exporter) ack(ctx context.Context, b *buffer.Batch[jetstream.Msg]) error {
	n := len(b.Items)
	var firstErr error
	for _, it := range b.Items[:n-1] {
		if err := it.Handle.Ack(); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("ack sequence %d: %w", it.Seq, err)
		}
	}
	last := b.Items[n-1]
	for attempt := 0; attempt < 3; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := last.Handle.DoubleAck(actx)
		cancel()
		if err == nil {
			return firstErr
		}
		if errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			return firstErr
		}
		if attempt == 2 || ctx.Err() != nil {
			return errors.Join(firstErr, fmt.Errorf("confirm ack of sequence %d: %w", last.Seq, err))
		}
	}
	return firstErr
}

// attemptTimeout bounds one PutObject call so that InProgress can be sent in
// time even when the store stalls.
func attemptTimeout(ackWait time.Duration) time.Duration {
	return min(max(ackWait/3, 5*time.Second), 5*time.Minute)
}

// backoff returns the wait before retry attempt+1: exponential from 200ms to
// 10s, with jitter over the upper half.
func backoff(attempt int) time.Duration {
	d := 200 * time.Millisecond << min(attempt, 6)
	d = min(d, 10*time.Second)
	return d/2 + rand.N(d/2+1)
}

// sleep waits for d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retryable reports whether a set-up error may go away by itself: a network
// problem or a server that is not ready, as opposed to a wrong setting.
func retryable(err error) bool {
	var ce *ConfigError
	var pe *PermanentError
	var api *jetstream.APIError
	switch {
	case errors.As(err, &ce), errors.As(err, &pe):
		return false
	case errors.As(err, &api):
		return api.Code >= 500
	}
	return true
}

// retry runs fn until it succeeds, fails for good or ctx ends, backing off
// between attempts and logging what it waits for.
func retry(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := fn(actx)
		cancel()
		if err == nil {
			if attempt > 0 {
				log.Info(what + " reachable again")
			}
			return nil
		}
		if !retryable(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (last error: %w)", what, ctx.Err(), err)
		}
		wait := backoff(attempt)
		log.Warn(what+" unavailable; retrying", "attempt", attempt+1, "retry_in", wait.Round(time.Millisecond), "error", err)
		if !sleep(ctx, wait) {
			return fmt.Errorf("%s: %w (last error: %w)", what, ctx.Err(), err)
		}
	}
}
