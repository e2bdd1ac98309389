package exporter

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/progress"
)

// walkResult is what a walk of a stream found about a ledger's holes.
type walkResult struct {
	stream   *streamWriter
	scanned  []progress.Range // the hole ranges looked up
	existing []uint64         // sorted: the sequences in them the stream still holds
	firstSeq uint64           // the stream's first sequence
	lastSeq  uint64           // and its last
	// The consumer's ack floor and last delivered stream sequence, read
	// before the holes were looked up; both 0 when it could not be read.
	ackFloor, delivered uint64
	// On a pinned consumer, the pin its leader holds, read with them;
	// pinRead is false when it was not read.
	pinned  string
	pinRead bool
	err     error
}

// Bounds on one walk, so that a stream with a million holes is walked a
// part at a time, each part reported back to the runner at once.
const (
	walkMaxRanges = 4096 // hole ranges looked up per walk
	walkMaxCalls  = 8192 // message lookups per walk
)

// walk asks the stream which sequences of holes it still holds, in ranges:
// for each hole range, the first message at or after its start (matching
// the consumer's filter), and so on while one is found inside it. A range
// below the stream's first sequence costs nothing; a range the stream no
// longer holds any of costs one lookup, however long it is. It runs beside
// the runner, which applies the result. cons is the consumer s pulls:
// where it stands tells whether it still delivers the holes found.
func (s *streamWriter) walk(ctx context.Context, cons jetstream.Consumer, holes []progress.Range) *walkResult {
	res := &walkResult{stream: s}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	pinned := s.cfg.Failover == config.FailoverPinned
	if (len(holes) > 0 || pinned || s.mode.AckLess) && cons != nil {
		// Read first: what it acked before is no hole by the time the
		// result is applied.
		if ci, err := cons.Info(ictx); err == nil {
			res.ackFloor, res.delivered = ci.AckFloor.Stream, ci.Delivered.Stream
			res.pinned, res.pinRead = jsclient.PinnedIn(ci), pinned
		}
	}
	info, err := s.stream.Info(ictx)
	cancel()
	if err != nil {
		res.err = fmt.Errorf("stream info: %w", err)
		return res
	}
	res.firstSeq, res.lastSeq = info.State.FirstSeq, info.State.LastSeq
	filters := s.cfg.Subjects
	if len(filters) == 0 || !s.filtered {
		filters = []string{">"}
	}
	if s.filtered && len(holes) > walkReadRanges && s.sn.js != nil {
		// Many holes: those of a filtered consumer between the messages
		// it reads, such as a partition's. Reading the matching
		// sequences costs a message's headers each, where looking each
		// hole up costs a request.
		var err error
		if holes, err = s.readHoles(ctx, holes, filters, res); err != nil {
			res.err = err
			return res
		}
	}
	calls := 0
	for _, h := range holes {
		at := max(h.First, res.firstSeq)
		for at <= h.Last && calls < walkMaxCalls {
			calls += len(filters)
			q, err := jsclient.NextMessage(ctx, s.sn.nc, s.sn.cfg.NATS, s.cfg.Stream, at, filters)
			if err != nil {
				res.err = err
				return res
			}
			if q == 0 || q > h.Last {
				at = 0
				break
			}
			res.existing = append(res.existing, q)
			at = q + 1
			if at == 0 {
				break
			}
		}
		switch {
		case at == 0 || at > h.Last:
			res.scanned = append(res.scanned, h)
		case at > h.First:
			res.scanned = append(res.scanned, progress.Range{First: h.First, Last: at - 1})
		}
		if calls >= walkMaxCalls {
			break
		}
	}
	return res
}

// walkReadRanges is how many hole ranges a walk of a filtered consumer
// looks up one at a time; with more it reads the matching sequences.
const walkReadRanges = 16

// walkMaxRead bounds the sequences one walk reads.
const walkMaxRead = 200_000

// readHoles reads, with a headers-only ordered consumer from the first
// hole on, the sequences of the messages that match filters, and adds to
// res the holes it covered and the sequences in them. It returns the holes
// past the last message it read, for lookups: a replica the consumer reads
// from may lag the leader, so only what it delivered counts as read.
func (s *streamWriter) readHoles(ctx context.Context, holes []progress.Range, filters []string, res *walkResult) ([]progress.Range, error) {
	start := max(holes[0].First, res.firstSeq)
	end := holes[len(holes)-1].Last
	if start > end {
		return holes, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	seqs, past, err := jsclient.ReadSequences(rctx, s.sn.js, s.cfg.Stream, filters, start, end, walkMaxRead, 0)
	if err != nil {
		return nil, err
	}
	read := start - 1 // every matching message up to read was delivered
	switch {
	case past:
		read = end
	case len(seqs) > 0:
		read = seqs[len(seqs)-1]
	}
	full := len(seqs) >= walkMaxRead // the rest is for the next walk
	scanned, existing, rest := progress.Scan(holes, seqs, read, full)
	res.scanned = append(res.scanned, scanned...)
	res.existing = append(res.existing, existing...)
	return rest, nil
}
