package jsclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
)

// APIPrefix is the JetStream API prefix the [nats] settings select:
// "$JS.API.", "$JS.<domain>.API." or the configured prefix, with a
// trailing dot.
func APIPrefix(n config.NATS) string {
	switch {
	case n.JetStreamDomain != "":
		return "$JS." + n.JetStreamDomain + ".API."
	case n.JetStreamAPIPrefix != "":
		return strings.TrimSuffix(n.JetStreamAPIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

// StreamSubjects returns subjects of stream that hold messages and match
// filter, sorted, and how many such subjects there are. It asks for the
// stream's info page by page (the server sends a bounded number of
// subjects per page) until it has at least limit subjects, or all of them
// when limit <= 0: a stream may hold millions of subjects, and a sample
// needs only the first page.
func StreamSubjects(ctx context.Context, nc *nats.Conn, n config.NATS, stream, filter string, limit int) ([]string, int, error) {
	subject := APIPrefix(n) + "STREAM.INFO." + stream
	seen := map[string]bool{}
	total := 0
	for {
		req, err := json.Marshal(struct {
			SubjectsFilter string `json:"subjects_filter"`
			Offset         int    `json:"offset,omitempty"`
		}{filter, len(seen)})
		if err != nil {
			return nil, 0, err
		}
		msg, err := nc.RequestWithContext(ctx, subject, req)
		if err != nil {
			return nil, 0, err
		}
		var resp struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
			Total int `json:"total"`
			State struct {
				Subjects map[string]uint64 `json:"subjects"`
			} `json:"state"`
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return nil, 0, err
		}
		if resp.Error != nil {
			return nil, 0, errors.New(resp.Error.Description)
		}
		for s := range resp.State.Subjects {
			seen[s] = true
		}
		total = max(resp.Total, len(seen))
		if len(resp.State.Subjects) == 0 || len(seen) >= total || limit > 0 && len(seen) >= limit {
			break
		}
	}
	subs := make([]string, 0, len(seen))
	for s := range seen {
		subs = append(subs, s)
	}
	slices.Sort(subs)
	return subs, total, nil
}

// ReadSequences returns, in stream order, the sequences in [from, to] of
// the stream's messages that match filters, reading their headers with an
// ordered consumer, up to limit of them (0: no limit). past reports that a
// message after to was seen: every match up to to is in seqs. Each fetch
// waits up to wait for messages; 0 takes only those there are.
func ReadSequences(ctx context.Context, js jetstream.JetStream, stream string, filters []string, from, to uint64, limit int, wait time.Duration) (seqs []uint64, past bool, err error) {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: filters,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from,
		HeadersOnly:    true,
		// The ordered consumer creates its consumer afresh at every
		// fetch, and by default tries for ever, outside ctx: a cluster
		// electing leaders again and again held a read for minutes.
		MaxResetAttempts: readResetAttempts,
	})
	if err != nil {
		return nil, false, fmt.Errorf("stream %s: read from %d: %w", stream, from, err)
	}
	defer func() {
		// Gone at once rather than after its inactivity threshold: walks
		// read every second.
		if info := cons.CachedInfo(); info != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = js.DeleteConsumer(dctx, stream, info.Name)
			cancel()
		}
	}()
	for limit == 0 || len(seqs) < limit {
		var batch jetstream.MessageBatch
		if wait > 0 {
			batch, err = cons.Fetch(1000, jetstream.FetchMaxWait(wait))
		} else {
			batch, err = cons.FetchNoWait(1000)
		}
		if err != nil {
			return nil, false, fmt.Errorf("stream %s: read from %d: %w", stream, from, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return nil, false, err
			}
			if md.Sequence.Stream > to {
				return seqs, true, nil
			}
			seqs = append(seqs, md.Sequence.Stream)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
			return nil, false, fmt.Errorf("stream %s: read from %d: %w", stream, from, err)
		}
		if n == 0 {
			break
		}
	}
	return seqs, false, nil
}

// readResetAttempts bounds the tries at creating the consumer a fetch of
// ReadSequences reads through (a second apart, then two, then four): a
// read that fails is tried again by its caller, a walk at its next round
// and a set-up with its backoff.
const readResetAttempts = 3

// NextMessage returns the sequence of the first message at or after seq
// whose subject matches one of filters, or 0 when the stream holds none. It
// asks the stream's leader, never a direct-get replica or mirror, which may
// lag and not hold a message yet: a message it lacks would be taken for a
// lost one.
func NextMessage(ctx context.Context, nc *nats.Conn, n config.NATS, stream string, seq uint64, filters []string) (uint64, error) {
	var first uint64
	for _, f := range filters {
		m, err := getStored(ctx, nc, n, stream, struct {
			Seq  uint64 `json:"seq"`
			Next string `json:"next_by_subj"`
		}{seq, f})
		switch {
		case errors.Is(err, errNotFound):
			continue
		case err != nil:
			return 0, fmt.Errorf("look up sequence %d: %w", seq, err)
		case m.Seq < seq:
			return 0, fmt.Errorf("look up sequence %d: the stream answered with sequence %d", seq, m.Seq)
		}
		if first == 0 || m.Seq < first {
			first = m.Seq
		}
	}
	return first, nil
}
