package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/lease"
)

// checkPartitions checks a partitioned entry: the stream's partition
// transform, that no unpartitioned consumer of the same name exists, each
// partition's consumer, and who holds each partition's lease.
func (p *planner) checkPartitions(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, key string, s config.Stream) {
	si := st.CachedInfo()
	src, dst := config.PartitionTransform(s.Partitions)
	switch t := si.Config.SubjectTransform; {
	case t != nil && t.Source == src && t.Destination == dst:
		p.add(OK, "stream %s: has the partition transform %q → %q: %d partitions", s.Stream, src, dst, s.Partitions)
	case t != nil:
		p.add(Fail, "stream %s: has the subject transform %q → %q; partitions = %d needs %q → %q: match %s.partitions to the stream's, or export another stream",
			s.Stream, t.Source, t.Destination, s.Partitions, src, dst, key)
	default:
		if why := config.CheckPartitionSubjects(si.Config.Subjects); why != "" {
			p.add(Fail, "stream %s: can not be partitioned: %s", s.Stream, why)
		} else {
			p.add(OK, "stream %s: jetlake sets the subject transform %q → %q on start: publishers publish as before; the stream stores each subject behind its partition number, and readers that filter by subject add a leading \"*.\"",
				s.Stream, src, dst)
		}
	}
	octx, cancel := p.op(ctx)
	_, err := st.Consumer(octx, s.Consumer)
	cancel()
	if denied := jsclient.Denied(octx); denied != nil {
		p.add(Fail, "stream %s, consumer %s: %v", s.Stream, s.Consumer, denied)
	} else if err == nil {
		p.add(Fail, "stream %s, consumer %s: exists without partitions: the partition consumers would export again what it exported; give %s.consumer another name, or delete this consumer",
			s.Stream, s.Consumer, key)
	}
	for k := range s.Partitions {
		pc := s
		pc.Consumer = config.PartitionConsumer(s.Consumer, k)
		pc.Subjects = config.PartitionFilters(k, s.Subjects, si.Config.Subjects)
		p.checkConsumer(ctx, st, key, pc)
	}
	p.checkLeases(ctx, js, s)
}

// checkLeases says who holds each partition of s, from the leases in the
// state bucket.
func (p *planner) checkLeases(ctx context.Context, js jetstream.JetStream, s config.Stream) {
	octx, cancel := p.op(ctx)
	defer cancel()
	kv, err := js.KeyValue(octx, p.c.State.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		p.add(OK, "stream %s: partitions: none held yet (no state bucket)", s.Stream)
		return
	}
	if err != nil {
		p.add(Warn, "stream %s: could not read the partition leases: %v", s.Stream, p.why(octx, err))
		return
	}
	leases, err := lease.PartitionHolders(octx, kv, p.c.Name, s)
	if err != nil {
		p.add(Warn, "stream %s: could not read the partition leases: %v", s.Stream, p.why(octx, err))
		return
	}
	holders := map[int]string{}
	instances := map[string]int{}
	for k, h := range leases {
		holders[k] = fmt.Sprintf("%s (pid %d on %s, up since %s)", h.Instance, h.PID, h.Host, h.Started.Format(time.RFC3339))
		instances[h.Instance]++
	}
	var lines []string
	free := 0
	for k := range s.Partitions {
		h, ok := holders[k]
		if !ok {
			h = "free"
			free++
		}
		lines = append(lines, fmt.Sprintf("%s: %s", config.PartitionConsumer(s.Consumer, k), h))
	}
	status := OK
	if free > 0 && len(instances) > 0 {
		status = Note
	}
	p.add(status, "stream %s: %d of %d partitions held by %d instances, %d free:\n      %s",
		s.Stream, s.Partitions-free, s.Partitions, len(instances), free, strings.Join(lines, "\n      "))
}
