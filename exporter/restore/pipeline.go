package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// Atomic batches are pipelined: while the commit of one batch awaits its
// answer, the next batch is built and sent to the server, which holds its
// messages apart until its commit. That commit is sent only once the batch
// before it is known to have landed, and its first message expects the
// stream's last sequence to be where that batch ended: each batch still
// lands whole or not at all, right after the one before. A batch sent but
// never committed (the one before failed, or the restore stopped) is
// dropped by the server after its batch timeout; the batch is sent again,
// as a new batch, after the one before is settled.

// pendingBatch is a batch handed to the target: its messages, what they
// restore, and the atomic batch it was last sent as.
type pendingBatch struct {
	msgs           []*nats.Msg
	first, lastSeq uint64 // the source sequences of its first and last message
	keep           bool   // its messages keep their source sequences

	id     string            // the atomic batch it was sent as
	before uint64            // the target's last sequence the batch was sent to follow
	answer chan commitAnswer // the answer to its commit, once sent
	staged bool              // sent but for its commit
	// ids: its messages carry message ids in place of the first one's
	// expected last sequence (withIDsAfter).
	ids bool
}

// commitAnswer is the server's answer to a batch's commit.
type commitAnswer struct {
	resp *nats.Msg
	err  error
}

// pipeline hands the batch over to the target: it sends it, settles the
// batch whose commit was sent before it, and then commits it. Its figures
// are counted once it is settled.
func (r *restorer) pipeline(ctx context.Context) error {
	b := &pendingBatch{msgs: r.batch, first: r.first, lastSeq: r.lastSeq, keep: r.keep}
	if p := r.pending; p != nil {
		// Sent to follow the pending batch; committed after it.
		r.t.stage(b, p.before+uint64(len(p.msgs)))
		if err := r.settle(ctx); err != nil {
			return err
		}
	}
	if !b.staged || b.before != r.t.last {
		// The batch before it failed first, or there was none: it may
		// follow another sequence.
		r.t.stage(b, r.t.last)
	}
	r.t.commit(ctx, b)
	r.pending = b
	return nil
}

// settle waits for the answer to the pending batch's commit and counts
// the batch published. When the commit failed, it finds out what became
// of the batch, and publishes it again as needed.
func (r *restorer) settle(ctx context.Context) error {
	if r.chain != nil {
		err := r.chain.close(ctx)
		r.rep.PublishedAlone = r.chain.alone
		return err
	}
	b := r.pending
	if b == nil {
		return nil
	}
	r.pending = nil
	last, err := r.t.await(ctx, b)
	if err := r.publishBatch(ctx, b, last, err); err != nil {
		return err
	}
	n := len(b.msgs)
	if b.keep {
		r.rep.KeptSequences = b.lastSeq
	}
	r.rep.Published += uint64(n)
	r.progress.Published.Add(int64(n))
	return nil
}

// publishBatch makes sure batch b landed, given the outcome of its
// commit: the last sequence it ended at, or err. When the attempt failed,
// it looks at what the target holds after the sequence it expected: the
// batch landed (an answer lost), someone else published (tried again
// after them), or another restore of this source is writing (an error).
func (r *restorer) publishBatch(ctx context.Context, b *pendingBatch, last uint64, err error) error {
	before := b.before
	for attempt := 1; ; attempt++ {
		if err == nil {
			if b.keep && last != b.lastSeq {
				return fmt.Errorf("target stream %s: message of sequence %d stored as %d", r.t.name, b.lastSeq, last)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		found, ferr := r.t.restored(ctx, 0)
		if ferr != nil {
			return errors.Join(err, ferr)
		}
		switch {
		case found == b.lastSeq:
			// It landed: the answer was lost.
			return nil
		case found >= b.first:
			return fmt.Errorf("target stream %s holds source sequence %d, in the batch of %d to %d being published: is another restore of %s running?", r.t.name, found, b.first, b.lastSeq, r.t.source)
		case found > r.rep.ResumedAfter && found < b.first-1 && r.rep.Published > 0:
			return fmt.Errorf("target stream %s: the last restored source sequence is %d, expected %d", r.t.name, found, b.first-1)
		}
		if b.keep && r.t.last != before {
			return fmt.Errorf("target stream %s: someone else published to it (its last sequence moved from %d to %d) while it was restored under the original sequences", r.t.name, before, r.t.last)
		}
		if errors.Is(err, errMoved) && attempt >= withIDsAfter && !b.keep && !b.ids {
			r.log.Info("another publisher keeps coming first; the batch goes with message ids in place of an expected last sequence",
				"target", r.t.name, "first_seq", b.first, "last_seq", b.lastSeq, "attempt", attempt)
			b.ids = true
			r.rep.BatchesWithIDs++
		}
		if attempt == batchAttempts {
			return fmt.Errorf("target stream %s: a batch of %d messages from source sequence %d failed %d times: %w", r.t.name, len(b.msgs), b.first, attempt, err)
		}
		r.log.Warn("a batch was not published; trying again", "target", r.t.name, "first_seq", b.first, "last_seq", b.lastSeq, "attempt", attempt, "error", err)
		if !errors.Is(err, errMoved) {
			select {
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		before = r.t.last
		last, err = r.t.publishAtomic(ctx, b.msgs, b.ids)
	}
}

// withIDsAfter is how many races in a row another publisher may win
// against a batch before the batch goes with message ids: its first
// message expects the stream's last sequence as this restore read it, and
// a publisher that publishes more often than a batch takes from that read
// to its commit would win every race. A batch with message ids lands whole
// and once all the same: after a failure the restore looks for the newest
// restored message before it publishes again, the stream's duplicate
// window refuses a second copy still in flight, and the batch after it is
// committed only once it landed.
const withIDsAfter = 2

// publishAtomic publishes msgs as one atomic batch expected right after
// the stream's last sequence as this restore knows it, or, with ids, with
// message ids, and returns the sequence of its last message.
func (t *target) publishAtomic(ctx context.Context, msgs []*nats.Msg, ids bool) (uint64, error) {
	b := &pendingBatch{msgs: msgs, ids: ids}
	t.stage(b, t.last)
	t.commit(ctx, b)
	return t.await(ctx, b)
}

// stage sends all of b's messages but the last as a new atomic batch
// whose first message expects the stream's last sequence to be after.
// The server holds them until the batch's commit; a batch it cannot take
// fails at its commit. A message that cannot be sent leaves the batch
// unstaged: it is sent again before its commit.
func (t *target) stage(b *pendingBatch, after uint64) {
	b.id, b.before, b.staged, b.answer = nuid.Next(), after, false, nil
	nc := t.js.Conn()
	id := []string{b.id} // shared by the batch's messages
	for i, m := range b.msgs {
		h := m.Header
		h[jetstreamext.BatchIDHeader] = id
		h[jetstreamext.BatchSeqHeader] = batchSeq(i + 1)
		delete(h, jetstreamext.BatchCommitHeader)
		delete(h, jetstream.ExpectedLastSeqHeader)
		switch {
		case b.ids:
			h.Set(jetstream.MsgIDHeader, t.msgID(m))
		case i == 0:
			h[jetstream.ExpectedLastSeqHeader] = []string{strconv.FormatUint(after, 10)}
		}
		if i == len(b.msgs)-1 {
			break
		}
		if err := nc.PublishMsg(m); err != nil {
			return
		}
	}
	b.staged = true
}

// batchSeqs are the values of the batch sequence header, shared by the
// batches: batchSeqs[i] is {"i"}.
var batchSeqs = func() [][]string {
	v := make([][]string, 1001)
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

// batchSeq is the value of the batch sequence header of the batch's i-th
// message, from 1.
func batchSeq(i int) []string {
	if i < len(batchSeqs) {
		return batchSeqs[i]
	}
	return []string{strconv.Itoa(i)}
}

// commit sends b's last message, which commits the batch; await waits for
// the answer.
func (t *target) commit(ctx context.Context, b *pendingBatch) {
	m := b.msgs[len(b.msgs)-1]
	m.Header[jetstreamext.BatchCommitHeader] = commitValue
	b.answer = make(chan commitAnswer, 1)
	timeout := t.js.Options().DefaultTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	go func() {
		rctx := ctx
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		resp, err := t.js.Conn().RequestMsgWithContext(rctx, m)
		b.answer <- commitAnswer{resp, err}
	}()
}

// commitValue is the value of the header that commits a batch.
var commitValue = []string{"1"}

// batchAck is the server's answer to a commit.
type batchAck struct {
	Error    *jetstream.APIError `json:"error,omitempty"`
	Stream   string              `json:"stream"`
	Sequence uint64              `json:"seq"`
	BatchID  string              `json:"batch"`
	Count    int                 `json:"count"`
}

// await waits for the answer to b's commit and returns the sequence its
// last message was stored under.
func (t *target) await(ctx context.Context, b *pendingBatch) (uint64, error) {
	var a commitAnswer
	select {
	case a = <-b.answer:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if a.err != nil {
		return 0, a.err
	}
	var ack batchAck
	if err := json.Unmarshal(a.resp.Data, &ack); err != nil {
		return 0, fmt.Errorf("target stream %s: the answer to a batch's commit: %w", t.name, jetstream.ErrInvalidJSAck)
	}
	if ack.Error != nil {
		if ack.Error.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return 0, fmt.Errorf("%w: %w", errMoved, ack.Error)
		}
		return 0, ack.Error
	}
	if ack.Stream == "" || ack.BatchID != b.id || ack.Count != len(b.msgs) {
		return 0, fmt.Errorf("target stream %s: the answer to the commit of batch %s of %d messages: %w", t.name, b.id, len(b.msgs), jetstreamext.ErrInvalidBatchAck)
	}
	if !b.ids && ack.Sequence != b.before+uint64(len(b.msgs)) {
		return 0, fmt.Errorf("target stream %s: a batch of %d after sequence %d ended at %d", t.name, len(b.msgs), b.before, ack.Sequence)
	}
	t.last = ack.Sequence
	return ack.Sequence, nil
}
