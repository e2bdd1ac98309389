package exporter

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/lossmarker"
)

// confirmGaps asks each stream which of the suspected gaps it really
// removed (below its first sequence, or deleted) and writes loss markers for
// those; sequences still in the stream will be delivered again.
func (r *runner) confirmGaps(ctx context.Context) {
	for _, s := range r.streams {
		if len(s.suspects) == 0 {
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info, err := s.stream.Info(ictx, jetstream.WithDeletedDetails(true))
		cancel()
		if err != nil {
			r.log.Warn("could not check a suspected gap; trying again", "stream", s.cfg.Stream, "error", err)
			continue
		}
		deleted := make(map[uint64]bool, len(info.State.Deleted))
		for _, q := range info.State.Deleted {
			deleted[q] = true
		}
		for _, sus := range s.suspects {
			var lost []uint64
			for q := sus.First; q <= sus.Last; q++ {
				if q < info.State.FirstSeq || deleted[q] {
					lost = append(lost, q)
				}
			}
			for _, run := range toRanges(lost) {
				r.enqueue(&job{stream: s, marker: &lossmarker.Marker{
					Stream: s.cfg.Stream, Consumer: s.cfg.Consumer,
					FirstSeq: run.First, LastSeq: run.Last, Count: run.Last - run.First + 1,
					Reason: lossmarker.Gap,
					Error:  fmt.Sprintf("the stream removed sequences %s before they were exported (limits, max age, or a delete)", run),
				}})
			}
		}
		s.suspects = s.suspects[:0]
	}
}
