package restore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/jetlake/jetlake/formats"
)

// The headers every restored message carries: where it comes from.
const (
	HeaderSourceStream   = "Jetlake-Source-Stream"
	HeaderSourceCreated  = "Jetlake-Source-Created" // the source stream's creation time: its incarnation
	HeaderSourceSequence = "Jetlake-Source-Sequence"
	HeaderSourceTime     = "Jetlake-Source-Time"
	// HeaderKeptPrefix goes before the name of a header of the original
	// message that the server would act on (Nats-*) or that would pass
	// for a restore's own (Jetlake-*): restored as is, a Nats-Msg-Id
	// would be taken for a duplicate, a Nats-Rollup would purge the
	// subject, a Nats-Expected-Last-Sequence would refuse the message,
	// and a forged Jetlake-Source-Sequence would move where a restore
	// resumes.
	HeaderKeptPrefix = "Jetlake-Source-Header-"
	// HeaderSourceRejected carries, on a rejected message restored with
	// Options.Rejected, why the connector rejected it.
	HeaderSourceRejected = "Jetlake-Source-Rejected"
	// rejectReasonHeader is the header a rejected object's records carry
	// their reason in (exporter.RejectReasonHeader).
	rejectReasonHeader = "Jetlake-Reject-Reason"
)

// target is the stream a restore publishes to.
type target struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	name   string
	fast   bool   // the stream takes fast batches: a restore publishes a chain (chain.go)
	atomic bool   // the stream takes atomic batches: each lands whole or not at all
	last   uint64 // the stream's last sequence as this restore knows it
	first  uint64 // and its first
	msgs   uint64 // messages it held when opened
	source string // the source stream and incarnation, as the headers name them
	stamp  string
	// sourceVals and stampVals are the header values of source and
	// stamp, shared by every message.
	sourceVals, stampVals []string
}

func openTarget(ctx context.Context, js jetstream.JetStream, name, source string, created time.Time) (*target, error) {
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("target stream %s does not exist: create it (with subjects that take the restored ones, allow_batched or allow_atomic for exactly once and allow_direct for a fast resume), then restore", name)
	}
	if err != nil {
		return nil, fmt.Errorf("target stream %s: %w", name, err)
	}
	si := st.CachedInfo()
	return &target{js: js, stream: st, name: name, fast: si.Config.AllowBatchPublish, atomic: si.Config.AllowAtomicPublish,
		last: si.State.LastSeq, first: si.State.FirstSeq, msgs: si.State.Msgs,
		source: source, stamp: created.UTC().Format(time.RFC3339Nano)}, nil
}

// Publishing says how a restore publishes into its target.
type Publishing string

// The ways of publishing, in the order a restore prefers them.
const (
	// PublishChained: fast batches, each message right after the one
	// before it (allow_batched); exactly once.
	PublishChained Publishing = "chained"
	// PublishAtomic: atomic batches, each right after the one before it
	// (allow_atomic); exactly once.
	PublishAtomic Publishing = "atomic"
	// PublishIDs: message ids; exactly once within the target's
	// duplicate window only.
	PublishIDs Publishing = "ids"
)

func (t *target) publishing() Publishing {
	switch {
	case t.fast:
		return PublishChained
	case t.atomic:
		return PublishAtomic
	}
	return PublishIDs
}

// message builds the message that restores r on subject.
func (t *target) message(r *formats.Record, subject string) *nats.Msg {
	if t.sourceVals == nil {
		t.sourceVals, t.stampVals = []string{t.source}, []string{t.stamp}
	}
	// Room for the batch headers too (pipeline.go).
	m := &nats.Msg{Subject: subject, Data: r.Data, Header: make(nats.Header, len(r.Headers)+8)}
	for k, vs := range r.Headers {
		switch {
		case strings.EqualFold(k, rejectReasonHeader):
			k = HeaderSourceRejected
		case kept(k):
			k = HeaderKeptPrefix + k
		}
		m.Header[k] = vs
	}
	// The values of the source's headers are the same for every message,
	// and shared: a header is replaced, never appended to.
	m.Header[HeaderSourceStream] = t.sourceVals
	m.Header[HeaderSourceCreated] = t.stampVals
	m.Header.Set(HeaderSourceSequence, strconv.FormatUint(r.Sequence, 10))
	m.Header.Set(HeaderSourceTime, r.Time.UTC().Format(time.RFC3339Nano))
	return m
}

// kept reports whether a header of the original message is restored under
// HeaderKeptPrefix.
func kept(name string) bool {
	return len(name) >= 5 && strings.EqualFold(name[:5], "Nats-") || len(name) >= 8 && strings.EqualFold(name[:8], "Jetlake-")
}

// resumeScanBatch is how many messages one look-up of a resume reads.
const resumeScanBatch = 256

// restored returns the highest source sequence a restore of this source
// put into the target: the newest message that carries this source's
// headers, looked for from the end of the stream back, over at most limit
// messages. 0 when the stream holds none (and was read to its start).
func (t *target) restored(ctx context.Context, limit int) (uint64, error) {
	info, err := t.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("target stream %s: %w", t.name, err)
	}
	t.last, t.first, t.msgs = info.State.LastSeq, info.State.FirstSeq, info.State.Msgs
	return t.restoredAfter(ctx, 0, limit, info.Config.AllowDirect)
}

// restoredAfter is restored over the stream's messages after sequence
// floor only.
func (t *target) restoredAfter(ctx context.Context, floor uint64, limit int, direct bool) (uint64, error) {
	scanned := 0
	low := max(t.first, floor+1)
	for hi := t.last; hi >= low && hi > 0; {
		lo := low
		if hi-low+1 > resumeScanBatch {
			lo = hi - resumeScanBatch + 1
		}
		msgs, err := t.read(ctx, lo, hi, direct)
		if err != nil {
			return 0, err
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			h := msgs[i].Header
			if h.Get(HeaderSourceStream) == t.source && h.Get(HeaderSourceCreated) == t.stamp {
				q, err := strconv.ParseUint(h.Get(HeaderSourceSequence), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("target stream %s, sequence %d: header %s %q: %w", t.name, msgs[i].Sequence, HeaderSourceSequence, h.Get(HeaderSourceSequence), err)
				}
				return q, nil
			}
		}
		scanned += int(hi - lo + 1)
		if limit > 0 && scanned >= limit && lo > low {
			return 0, fmt.Errorf("target stream %s: none of its last %d messages was restored from %s; raise -resume-scan to look further back", t.name, scanned, t.source)
		}
		if lo == low {
			break
		}
		hi = lo - 1
	}
	return 0, nil
}

// read returns the stream's messages from lo to hi (those it still holds).
func (t *target) read(ctx context.Context, lo, hi uint64, direct bool) ([]*jetstream.RawStreamMsg, error) {
	var out []*jetstream.RawStreamMsg
	if direct {
		msgs, err := jetstreamext.GetBatch(ctx, t.js, t.name, int(hi-lo+1), jetstreamext.GetBatchSeq(lo))
		if err != nil {
			return nil, fmt.Errorf("target stream %s: read from %d: %w", t.name, lo, err)
		}
		for m, err := range msgs {
			if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstreamext.ErrNoMessages) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("target stream %s: read from %d: %w", t.name, lo, err)
			}
			if m.Sequence > hi {
				break
			}
			out = append(out, m)
		}
		return out, nil
	}
	for q := lo; q <= hi; q++ {
		m, err := t.stream.GetMsg(ctx, q)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("target stream %s: read %d: %w", t.name, q, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// keepSequences makes an empty target's next sequence first, so that the
// restored messages keep their sequences: a purge up to first moves an
// empty stream's first sequence there.
func (t *target) keepSequences(ctx context.Context, first uint64) error {
	if err := t.stream.Purge(ctx, jetstream.WithPurgeSequence(first)); err != nil {
		return fmt.Errorf("target stream %s: start at sequence %d: %w", t.name, first, err)
	}
	info, err := t.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("target stream %s: %w", t.name, err)
	}
	if info.State.LastSeq != first-1 {
		return fmt.Errorf("target stream %s: purged up to %d, its last sequence is %d, not %d", t.name, first, info.State.LastSeq, first-1)
	}
	t.last, t.first = info.State.LastSeq, info.State.FirstSeq
	return nil
}

// errMoved says the target's last sequence was not what the batch
// expected: someone else published, or an earlier attempt of the batch
// landed after all.
var errMoved = errors.New("the target stream's last sequence moved")

// msgID is the message id of restored message m: its source and the
// sequence it had there.
func (t *target) msgID(m *nats.Msg) string {
	return t.source + ":" + t.stamp + ":" + m.Header.Get(HeaderSourceSequence)
}

// publishIDs publishes msgs one by one, each with a message id the
// stream's duplicate window takes a second copy of for a duplicate.
func (t *target) publishIDs(ctx context.Context, msgs []*nats.Msg) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		m.Header.Set(jetstream.MsgIDHeader, t.msgID(m))
		f, err := t.js.PublishMsgAsync(m)
		if err != nil {
			return fmt.Errorf("target stream %s: publish: %w", t.name, err)
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case ack := <-f.Ok():
			t.last = max(t.last, ack.Sequence)
		case err := <-f.Err():
			return fmt.Errorf("target stream %s: publish: %w", t.name, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
