package config

import (
	"fmt"
	"slices"
	"time"
)

// sizeMoreThanZero is the check of max_buffered_bytes on its own.
func sizeMoreThanZero(n int64) string {
	if n <= 0 {
		return "must be more than 0, such as \"256MiB\""
	}
	return ""
}

// rotationCrossChecks checks the rule of [rotation] that relates its keys:
// the buffers hold at least one full file. It names the key the file sets,
// so that the line points at it.
func (c *checker) rotationCrossChecks(t map[string]any, p keyPath, r *Rotation) {
	size, buffered := p.key("max_file_size"), p.key("max_buffered_bytes")
	if !c.ok(size) || !c.ok(buffered) || r.MaxBufferedBytes >= r.MaxFileSize {
		return
	}
	if has(t, "max_buffered_bytes") || !has(t, "max_file_size") {
		c.report(buffered, "%s is less than max_file_size (%s): the buffers must hold at least one full file; raise max_buffered_bytes or lower max_file_size", FormatSize(r.MaxBufferedBytes), FormatSize(r.MaxFileSize))
	} else {
		c.report(size, "%s is more than max_buffered_bytes (%s): the buffers must hold at least one full file; lower max_file_size or raise max_buffered_bytes", FormatSize(r.MaxFileSize), FormatSize(r.MaxBufferedBytes))
	}
	c.fail(buffered)
	r.MaxBufferedBytes = 0
}

// jetStreamName is the check of a stream or consumer name; what says
// which.
func jetStreamName(what string) func(string) string {
	return func(name string) string {
		if why := checkJetStreamName(name); why != "" {
			return fmt.Sprintf("%q is not a %s name: it %s", name, what, why)
		}
		return ""
	}
}

// wholeStream is the note of an entry without subjects.
func wholeStream(s *Stream) string {
	if len(s.Subjects) == 0 {
		return "the whole stream"
	}
	return ""
}

// storageNote is the note of consumer_storage left out.
func storageNote(s *Stream) string {
	if s.ConsumerStorage == "" {
		return "for a consumer jetlake creates; an existing one keeps its own"
	}
	return ""
}

// notNegative is the check of max_ack_pending on its own.
func notNegative(n int) string {
	if n < 0 {
		return fmt.Sprintf("%d is negative; allowed: 0 (derived from the rotation limits) or more", n)
	}
	return ""
}

// minPriorityTimeout is the check of priority_timeout on its own.
func minPriorityTimeout(d time.Duration) string {
	if d < 5*time.Second {
		return fmt.Sprintf("%s is less than the minimum of 5s", d)
	}
	return ""
}

// streamCrossChecks checks the rules that relate the keys of one
// [[streams]] entry, s, the table t at p, and it to the entries before
// it: partitions imply pinned failover, lease_ttl goes with partitions and
// priority_timeout with pinned failover (each is zero where it does not
// apply, as partitions is when it is 1), and each entry of a stream reads
// it with its own consumer.
func (c *checker) streamCrossChecks(t map[string]any, p keyPath, s *Stream, earlier []Stream) {
	s.Line = c.lines.line(p)
	switch {
	case s.Partitions > 1 && has(t, "failover") && s.Failover != FailoverPinned:
		c.report(p.key("failover"), "must be \"pinned\" with partitions = %d: each partition has one puller at a time; leave failover out or set it to \"pinned\"", s.Partitions)
		s.Partitions = 0
	case s.Partitions > 1:
		s.Failover = FailoverPinned
	default:
		s.Partitions = 0
	}
	if has(t, "lease_ttl") && c.ok(p.key("lease_ttl")) && !s.Partitioned() {
		c.report(p.key("lease_ttl"), "is set but partitions is not more than 1; set partitions or leave lease_ttl out")
	}
	if !s.Partitioned() {
		s.LeaseTTL = 0
	}
	if has(t, "priority_timeout") && c.ok(p.key("priority_timeout")) && s.Failover != FailoverPinned {
		c.report(p.key("priority_timeout"), "is set but failover is not \"pinned\"; set failover = \"pinned\" or leave priority_timeout out")
	}
	if s.Failover != FailoverPinned {
		s.PriorityTimeout = 0
	}
	if s.Stream == "" || s.Consumer == "" {
		return
	}
	for j, e := range earlier {
		if e.Stream == s.Stream && e.Consumer == s.Consumer {
			c.report(p.key("consumer"), "streams[%d] already reads stream %q with consumer %q; give each entry of one stream its own consumer", j+1, s.Stream, s.Consumer)
			break
		}
	}
}

// streamsCrossChecks checks the rules that relate each [[streams]] entry
// of conn to [rotation]: ack_wait leaves room for an upload after a
// message waited max_file_age in a buffer, and max_ack_pending = 0 is
// derived from the rotation limits.
func (c *checker) streamsCrossChecks(top map[string]any, conn *Connector) {
	rot := keyPath{}.key("rotation")
	rotT, _ := top["rotation"].(map[string]any)
	tables, paths := entries(top, keyPath{}.key("streams"))
	for i, p := range paths {
		s := &conn.Streams[i]
		c.streamAckWait(tables[i], p, rotT, rot, conn.Rotation, s)
		if s.MaxAckPending == 0 && c.ok(p.key("max_ack_pending")) && c.ok(rot) &&
			c.ok(rot.key("max_buffered_bytes")) && c.ok(rot.key("max_messages_per_file")) {
			s.MaxAckPending = DerivedAckPending(conn.Rotation)
		}
	}
}

// streamAckWait checks that the ack_wait of s, the entry t at p, is at
// least twice max_file_age of r, the [rotation] table rotT at rot: a
// message may wait max_file_age in a buffer before its upload starts, and
// must be acked before ack_wait ends; half of ack_wait is left for the
// upload and its retries.
func (c *checker) streamAckWait(t map[string]any, p keyPath, rotT map[string]any, rot keyPath, r Rotation, s *Stream) {
	if !c.ok(p.key("ack_wait")) || !c.ok(rot) || !c.ok(rot.key("max_file_age")) || 2*r.MaxFileAge <= s.AckWait {
		return
	}
	age, ack := FormatDuration(r.MaxFileAge), FormatDuration(s.AckWait)
	if has(rotT, "max_file_age") || !has(t, "ack_wait") {
		c.report(rot.key("max_file_age"), "%s is more than half of %s (%s): a message waits up to max_file_age in a buffer and must then be uploaded and acked within ack_wait; lower max_file_age to at most %s or raise %s to at least %s",
			age, p.key("ack_wait"), ack, FormatDuration(s.AckWait/2), p.key("ack_wait"), FormatDuration(2*r.MaxFileAge))
	} else {
		c.report(p.key("ack_wait"), "%s is less than twice rotation.max_file_age (%s): a message waits up to max_file_age in a buffer and must then be uploaded and acked within ack_wait; raise ack_wait to at least %s or lower rotation.max_file_age to at most %s",
			ack, age, FormatDuration(2*r.MaxFileAge), FormatDuration(s.AckWait/2))
	}
}

// entries returns the entries of the array of tables at p, a key of t,
// that are tables, with their paths: the entries of the list a tableList
// that keeps every entry decodes from it.
func entries(t map[string]any, p keyPath) ([]map[string]any, []keyPath) {
	var (
		tables []map[string]any
		paths  []keyPath
	)
	switch v := t[p[len(p)-1].key].(type) {
	case []map[string]any:
		for i, m := range v {
			tables, paths = append(tables, m), append(paths, p.index(i+1))
		}
	case []any:
		for i, e := range v {
			if m, ok := e.(map[string]any); ok {
				tables, paths = append(tables, m), append(paths, p.index(i+1))
			}
		}
	}
	return tables, paths
}

// DerivedAckPending is the max_ack_pending of a consumer whose file says 0:
// one pending message per 256 bytes of the buffer budget, within
// [minDerivedAckPending, maxDerivedAckPending], and room for two full files
// so that a count limit can always be reached.
//
// The ceiling spares the server: nats-server rewrites a consumer's whole
// pending set about ten times a second, so its CPU grows with the messages
// held unacked. At 1,000,000 pending it spent more on that than on
// delivering, and a zstd export took half as long again as at 250,000.
func DerivedAckPending(r Rotation) int {
	n := min(max(r.MaxBufferedBytes/derivedAckPendingUnit, minDerivedAckPending), maxDerivedAckPending)
	return max(int(n), 2*r.MaxMessagesPerFile)
}

// subjectsKind reads the filter subjects of an entry: an array of
// strings of which it keeps the valid ones, reporting each other one at
// its index.
var subjectsKind = kind[[]string]{
	name:   stringsKind.name,
	encode: stringsKind.encode,
	decode: func(c *checker, p keyPath, v any) ([]string, bool) {
		subjects, ok := stringsKind.decode(c, p, v)
		if !ok {
			return nil, false
		}
		var out []string
		for i, s := range subjects {
			ep := p.index(i + 1)
			if why := checkSubject(s); why != "" {
				c.report(ep, "%q is not a valid subject: %s", s, why)
				continue
			}
			if slices.Contains(out, s) {
				c.report(ep, "%q is listed twice", s)
				continue
			}
			overlap := false
			for _, prev := range out {
				if SubjectsOverlap(prev, s) {
					c.report(ep, "%q overlaps %q; the filter subjects of one consumer must not overlap", s, prev)
					overlap = true
					break
				}
			}
			if !overlap {
				out = append(out, s)
			}
		}
		return out, true
	},
}
