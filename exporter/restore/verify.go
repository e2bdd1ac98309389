package restore

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// VerifyResult is what a verify found comparing the target stream with the
// lake: every selected message must be in the target once, with the
// subject, headers and payload a restore gives it.
type VerifyResult struct {
	Checked    uint64   // selected messages looked for
	Found      uint64   // messages of this source the target holds
	Missing    uint64   // selected, not in the target
	Duplicated uint64   // selected, in the target more than once
	Differ     uint64   // in the target with another subject, headers or payload
	Extra      uint64   // in the target, of this source, within the range, not selected
	Examples   []string // the first problems found
}

// OK reports whether the target holds every selected message once, as
// restored.
func (v *VerifyResult) OK() bool { return v.Missing+v.Duplicated+v.Differ+v.Extra == 0 }

// maxExamples bounds the problems a VerifyResult names.
const maxExamples = 20

func (v *VerifyResult) example(format string, args ...any) {
	if len(v.Examples) < maxExamples {
		v.Examples = append(v.Examples, fmt.Sprintf(format, args...))
	}
}

// restoredMsg is what verify keeps of a message of the target.
type restoredMsg struct {
	hash  uint64
	mixed bool // copies of it differ
	count int
	seen  bool
}

// readRestored reads every message of the target that carries this
// source's headers, by source sequence.
func (t *target) readRestored(ctx context.Context) (map[uint64]*restoredMsg, error) {
	out := map[uint64]*restoredMsg{}
	info, err := t.stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("target stream %s: %w", t.name, err)
	}
	if info.State.Msgs == 0 {
		return out, nil
	}
	// The consumer is created afresh at every fetch: bounded tries, where
	// the default tries for ever, outside ctx.
	cons, err := t.js.OrderedConsumer(ctx, t.name, jetstream.OrderedConsumerConfig{MaxResetAttempts: 5})
	if err != nil {
		return nil, fmt.Errorf("target stream %s: read: %w", t.name, err)
	}
	for {
		batch, err := cons.Fetch(1000)
		if err != nil {
			return nil, fmt.Errorf("target stream %s: read: %w", t.name, err)
		}
		last := uint64(0)
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			last = md.Sequence.Stream
			h := m.Headers()
			if h.Get(HeaderSourceStream) != t.source || h.Get(HeaderSourceCreated) != t.stamp {
				continue
			}
			q, err := strconv.ParseUint(h.Get(HeaderSourceSequence), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("target stream %s, sequence %d: header %s: %w", t.name, last, HeaderSourceSequence, err)
			}
			hash := msgHash(m.Subject(), h, m.Data())
			e := out[q]
			if e == nil {
				e = &restoredMsg{hash: hash}
				out[q] = e
			}
			e.mixed = e.mixed || e.hash != hash
			e.count++
		}
		if err := batch.Error(); err != nil {
			return nil, fmt.Errorf("target stream %s: read: %w", t.name, err)
		}
		if last >= info.State.LastSeq || last == 0 {
			return out, nil
		}
	}
}

// msgHash hashes what a restore decides of a message: its subject, its
// headers but those named Nats-* (which a restore never sets: the server
// and the publish add them) and its payload.
func msgHash(subject string, h nats.Header, data []byte) uint64 {
	f := fnv.New64a()
	f.Write([]byte(subject))
	f.Write([]byte{0})
	keys := make([]string, 0, len(h))
	for k := range h {
		if !(len(k) >= 5 && strings.EqualFold(k[:5], "Nats-")) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		f.Write([]byte(k))
		f.Write([]byte{':'})
		for _, v := range h[k] {
			f.Write([]byte(v))
			f.Write([]byte{0})
		}
		f.Write([]byte{1})
	}
	f.Write(data)
	return f.Sum64()
}
