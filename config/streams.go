package config

import (
	"slices"
	"time"
)

// rotationCheck is Rotation with which values are usable for checks that
// relate them to others, and which the file sets.
type rotationCheck struct {
	Rotation
	sizeOK, countOK, ageOK, bufferedOK bool
	sizeSet, countSet, ageSet          bool
	path                               keyPath
}

func (c *checker) rotation(t map[string]any, p keyPath) rotationCheck {
	c.unknown(t, p, &rotationSpec)
	r := rotationCheck{
		path:     p,
		sizeSet:  has(t, "max_file_size"),
		countSet: has(t, "max_messages_per_file"),
		ageSet:   has(t, "max_file_age"),
	}

	if n, ok := c.size(t, p, "max_file_size", defaultMaxFileSize); ok {
		if n < minFileSize || n > maxFileSize {
			c.report(p.key("max_file_size"), "%s is out of range; allowed: %s to %s", FormatSize(n), FormatSize(minFileSize), FormatSize(maxFileSize))
		} else {
			r.MaxFileSize, r.sizeOK = n, true
		}
	}
	if n, ok := c.integer(t, p, "max_messages_per_file", defaultMaxMessagesPerFile); ok {
		if n < 0 || n > maxMessagesPerFile {
			c.report(p.key("max_messages_per_file"), "%d is out of range; allowed: 0 (no count limit) to %d", n, maxMessagesPerFile)
		} else {
			r.MaxMessagesPerFile, r.countOK = int(n), true
		}
	}
	if d, ok := c.duration(t, p, "max_file_age", defaultMaxFileAge); ok {
		if d <= 0 {
			c.report(p.key("max_file_age"), "must be more than 0, such as \"1m\"")
		} else {
			r.MaxFileAge, r.ageOK = d, true
		}
	}
	if n, ok := c.size(t, p, "max_buffered_bytes", defaultMaxBufferedBytes); ok {
		switch {
		case n <= 0:
			c.report(p.key("max_buffered_bytes"), "must be more than 0, such as \"256MiB\"")
		case r.sizeOK && n < r.MaxFileSize:
			// Name the key the file sets, so the line points at it.
			if has(t, "max_buffered_bytes") || !r.sizeSet {
				c.report(p.key("max_buffered_bytes"), "%s is less than max_file_size (%s): the buffers must hold at least one full file; raise max_buffered_bytes or lower max_file_size", FormatSize(n), FormatSize(r.MaxFileSize))
			} else {
				c.report(p.key("max_file_size"), "%s is more than max_buffered_bytes (%s): the buffers must hold at least one full file; lower max_file_size or raise max_buffered_bytes", FormatSize(r.MaxFileSize), FormatSize(n))
			}
		default:
			r.MaxBufferedBytes, r.bufferedOK = n, true
		}
	}
	return r
}

// streams checks the [[streams]] entries and relates them to the rotation
// limits.
func (c *checker) streams(top map[string]any, connector string, rot rotationCheck) []Stream {
	p := keyPath{}.key("streams")
	// tables holds the entries that are tables, by 1-based index.
	tables := make(map[int]map[string]any)
	count := 0
	switch v := top["streams"].(type) {
	case nil:
		c.report(p, "missing; add a [[streams]] table for each stream to export")
		return nil
	case []map[string]any:
		for i, t := range v {
			tables[i+1] = t
		}
		count = len(v)
	case []any:
		for i, e := range v {
			if t, ok := e.(map[string]any); ok {
				tables[i+1] = t
			} else {
				c.report(p.index(i+1), "must be a table, not %s", typeName(e))
			}
		}
		count = len(v)
	default:
		c.report(p, "must be an array of tables, not %s; write a [[streams]] header for each stream", typeName(v))
		return nil
	}
	if count == 0 {
		c.report(p, "is empty; add a [[streams]] table for each stream to export")
		return nil
	}

	type pair struct{ stream, consumer string }
	pairs := make(map[pair]int)
	out := make([]Stream, 0, len(tables))
	for i := range count {
		t, ok := tables[i+1]
		if !ok {
			continue
		}
		sp := p.index(i + 1)
		s := c.stream(t, sp, connector, rot)
		s.Line = c.lines.line(sp)
		if s.Stream != "" && s.Consumer != "" {
			k := pair{s.Stream, s.Consumer}
			if j, ok := pairs[k]; ok {
				c.report(sp.key("consumer"), "streams[%d] already reads stream %q with consumer %q; give each entry of one stream its own consumer", j, s.Stream, s.Consumer)
			} else {
				pairs[k] = i + 1
			}
		}
		out = append(out, s)
	}
	return out
}

// stream checks one [[streams]] entry: what it reads, with which consumer,
// and how that consumer fails over and bounds its pending messages.
func (c *checker) stream(t map[string]any, p keyPath, connector string, rot rotationCheck) Stream {
	c.unknown(t, p, &streamSpec)
	s := Stream{DeliverPolicy: DeliverAll, Consumer: connector}
	c.streamSource(t, p, &s)
	c.streamConsumer(t, p, connector, &s)
	c.streamAckWait(t, p, rot, &s)
	c.streamFailover(t, p, &s)
	c.streamMaxAckPending(t, p, rot, &s)
	return s
}

// streamSource checks what the entry reads: stream and subjects.
func (c *checker) streamSource(t map[string]any, p keyPath, s *Stream) {
	if !has(t, "stream") {
		c.report(p.key("stream"), "missing; name the JetStream stream to export, such as \"EVENTS\"")
	} else if name, ok := c.str(t, p, "stream", ""); ok {
		if why := checkJetStreamName(name); why != "" {
			c.report(p.key("stream"), "%q is not a stream name: it %s", name, why)
		} else {
			s.Stream = name
		}
	}
	if subjects, ok := c.stringList(t, p, "subjects"); ok {
		s.Subjects = c.subjects(subjects, p.key("subjects"))
	}
}

// streamConsumer checks the consumer the entry reads with: its name
// (default the connector's), deliver_policy and consumer_storage.
func (c *checker) streamConsumer(t map[string]any, p keyPath, connector string, s *Stream) {
	if name, ok := c.str(t, p, "consumer", connector); ok && has(t, "consumer") {
		if why := checkJetStreamName(name); why != "" {
			c.report(p.key("consumer"), "%q is not a consumer name: it %s", name, why)
			s.Consumer = ""
		} else {
			s.Consumer = name
		}
	}
	if d, ok := c.str(t, p, "deliver_policy", DeliverAll); ok {
		switch d {
		case DeliverAll, DeliverNew:
			s.DeliverPolicy = d
		default:
			c.report(p.key("deliver_policy"), "%q is not a deliver policy; allowed: all (from the first message in the stream), new (from the first message published after the consumer is created)", d)
		}
	}
	if d, ok := c.str(t, p, "consumer_storage", ""); ok && has(t, "consumer_storage") {
		switch d {
		case StorageMemory, StorageFile:
			s.ConsumerStorage = d
		default:
			c.report(p.key("consumer_storage"), "%q is not a consumer storage; allowed: memory (the server keeps the consumer's state in memory; jetlake rebuilds it from its export record after a server restart), file (on disk)", d)
		}
	}
}

// streamAckWait checks ack_wait, and that it leaves room for an upload
// after a message waited max_file_age in a buffer.
func (c *checker) streamAckWait(t map[string]any, p keyPath, rot rotationCheck, s *Stream) {
	ackOK := false
	if d, ok := c.duration(t, p, "ack_wait", defaultAckWait); ok {
		if d < minAckWait {
			c.report(p.key("ack_wait"), "%s is less than the minimum of %s", FormatDuration(d), FormatDuration(minAckWait))
		} else {
			s.AckWait, ackOK = d, true
		}
	}
	if !ackOK || !rot.ageOK || 2*rot.MaxFileAge <= s.AckWait {
		return
	}
	// A message may wait max_file_age in a buffer before its upload
	// starts, and must be acked before ack_wait ends; half of ack_wait
	// is left for the upload and its retries.
	age, ack := FormatDuration(rot.MaxFileAge), FormatDuration(s.AckWait)
	if rot.ageSet || !has(t, "ack_wait") {
		c.report(rot.path.key("max_file_age"), "%s is more than half of %s (%s): a message waits up to max_file_age in a buffer and must then be uploaded and acked within ack_wait; lower max_file_age to at most %s or raise %s to at least %s",
			age, p.key("ack_wait"), ack, FormatDuration(s.AckWait/2), p.key("ack_wait"), FormatDuration(2*rot.MaxFileAge))
	} else {
		c.report(p.key("ack_wait"), "%s is less than twice rotation.max_file_age (%s): a message waits up to max_file_age in a buffer and must then be uploaded and acked within ack_wait; raise ack_wait to at least %s or lower rotation.max_file_age to at most %s",
			ack, age, FormatDuration(2*rot.MaxFileAge), FormatDuration(s.AckWait/2))
	}
}

// streamFailover checks how instances share the stream: failover,
// partitions (which imply pinned failover), lease_ttl and
// priority_timeout.
func (c *checker) streamFailover(t map[string]any, p keyPath, s *Stream) {
	if f, ok := c.str(t, p, "failover", ""); ok {
		switch f {
		case "", FailoverPinned:
			s.Failover = f
		default:
			c.report(p.key("failover"), "%q is not a failover mode; allowed: \"pinned\" (active/standby through a priority group with the pinned_client policy), or leave it out", f)
		}
	}
	if n, ok := c.integer(t, p, "partitions", 1); ok {
		switch {
		case n < 1 || n > MaxPartitions:
			c.report(p.key("partitions"), "%d is out of range; allowed: 1 (not partitioned) to %d", n, MaxPartitions)
		case n > 1 && has(t, "failover") && s.Failover != FailoverPinned:
			c.report(p.key("failover"), "must be \"pinned\" with partitions = %d: each partition has one puller at a time; leave failover out or set it to \"pinned\"", n)
		case n > 1:
			s.Partitions = int(n)
			s.Failover = FailoverPinned
		}
	}
	if d, ok := c.duration(t, p, "lease_ttl", defaultLeaseTTL); ok {
		switch {
		case has(t, "lease_ttl") && s.Partitions < 2:
			c.report(p.key("lease_ttl"), "is set but partitions is not more than 1; set partitions or leave lease_ttl out")
		case d < minLeaseTTL:
			c.report(p.key("lease_ttl"), "%s is less than the minimum of %s", FormatDuration(d), FormatDuration(minLeaseTTL))
		case s.Partitions > 1:
			s.LeaseTTL = d
		}
	}
	if d, ok := c.duration(t, p, "priority_timeout", defaultPriorityTimeout); ok {
		switch {
		case has(t, "priority_timeout") && s.Failover != FailoverPinned:
			c.report(p.key("priority_timeout"), "is set but failover is not \"pinned\"; set failover = \"pinned\" or leave priority_timeout out")
		case d < 5*time.Second:
			c.report(p.key("priority_timeout"), "%s is less than the minimum of 5s", d)
		case s.Failover == FailoverPinned:
			s.PriorityTimeout = d
		}
	}
}

// streamMaxAckPending checks max_ack_pending; 0 derives it from the
// rotation limits.
func (c *checker) streamMaxAckPending(t map[string]any, p keyPath, rot rotationCheck, s *Stream) {
	if n, ok := c.integer(t, p, "max_ack_pending", 0); ok {
		switch {
		case n < 0:
			c.report(p.key("max_ack_pending"), "%d is negative; allowed: 0 (derived from the rotation limits) or more", n)
		case n == 0:
			if rot.bufferedOK && rot.countOK {
				s.MaxAckPending = DerivedAckPending(rot.Rotation)
			}
		default:
			s.MaxAckPending = int(n)
		}
	}
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

// subjects checks filter subjects and returns the valid ones.
func (c *checker) subjects(subjects []string, p keyPath) []string {
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
	return out
}
