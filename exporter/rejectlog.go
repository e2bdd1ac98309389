package exporter

import (
	"cmp"
	"log/slog"
	"slices"
	"time"

	"github.com/jetlake/jetlake/pathtemplate"
)

// rejectLogEvery is how often the rejected messages are summed up in the
// log: one line per stream and reason, whatever the number of messages.
const rejectLogEvery = 10 * time.Second

// rejections counts the messages rejected since the last summary, by
// stream and reason, for the log. A line per message would let a
// publisher set the log's rate, and the reasons quote the payloads; the
// rejected objects hold both, and jetlake_messages_rejected_total counts
// them.
type rejections struct {
	counts map[rejectedKey]*rejectedCount
	since  time.Time // of the first message counted; zero when none is
}

// rejectedKey is what a summary line is per.
type rejectedKey struct{ stream, reason string }

// rejectedCount is what a summary line says.
type rejectedCount struct {
	n           int
	first, last uint64 // the lowest and highest sequence
}

// add counts a rejected message of stream, sequence seq, for reason (the
// metric's reason label), at now.
func (c *rejections) add(stream, reason string, seq uint64, now time.Time) {
	if c.counts == nil {
		c.counts = make(map[rejectedKey]*rejectedCount)
	}
	if c.since.IsZero() {
		c.since = now
	}
	k := rejectedKey{stream, reason}
	n := c.counts[k]
	if n == nil {
		n = &rejectedCount{first: seq, last: seq}
		c.counts[k] = n
	}
	n.n++
	n.first, n.last = min(n.first, seq), max(n.last, seq)
}

// report logs the counts, a line per stream and reason, and starts
// counting anew, when the first of them is rejectLogEvery old at now, or
// at once when final; otherwise it does nothing. prefix is the
// connector's key prefix, for the line to say where the rejected objects
// are.
func (c *rejections) report(log *slog.Logger, now time.Time, final bool, prefix string) {
	if c.since.IsZero() || !final && now.Sub(c.since) < rejectLogEvery {
		return
	}
	keys := make([]rejectedKey, 0, len(c.counts))
	for k := range c.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rejectedKey) int {
		return cmp.Or(cmp.Compare(a.stream, b.stream), cmp.Compare(a.reason, b.reason))
	})
	for _, k := range keys {
		n := c.counts[k]
		log.Warn("messages rejected", "stream", k.stream, "reason", k.reason, "messages", n.n,
			"first_sequence", n.first, "last_sequence", n.last, "over", now.Sub(c.since).Round(time.Second),
			"under", pathtemplate.StreamPrefix(prefix, pathtemplate.Rejected, k.stream))
	}
	clear(c.counts)
	c.since = time.Time{}
}
