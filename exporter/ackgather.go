package exporter

import (
	"context"
	"sync"
	"time"
)

// Acks of small batches are gathered: an object of a few messages costs
// the server a round trip for its confirmation, and, since every change of
// a consumer's unacked set makes the server write the whole set again (at
// most ten times a second), acks that trickle in one object at a time keep
// it rewriting a large set all the time. At 10,000 objects of 10 messages
// each, sending them every quarter second cut nats-server's CPU by a fifth.
// Large batches are acked at once: their acks are few, and holding them
// back would hold back deliveries at max_ack_pending.
const (
	// ackGatherMessages is the largest batch whose acks are gathered.
	ackGatherMessages = 1000
	// ackGatherWindow is how long the first result of a burst waits for
	// others.
	ackGatherWindow = 250 * time.Millisecond
	// ackGatherMargin is the time a gathered batch's messages must still be
	// owned for when it is stored; a batch closer to its AckWait is acked
	// at once.
	ackGatherMargin = 4 * ackGatherWindow
	// ackGatherMax is the most results a burst holds.
	ackGatherMax = 4096
)

// gatherable reports whether the acks of a stored batch may wait for
// others: the batch is small and its messages are owned well beyond the
// window.
func (res *result) gatherable(now time.Time) bool {
	return res.acks != nil && res.job != nil && res.job.batch != nil && res.job.stream != nil &&
		res.job.batch.Len() <= ackGatherMessages && res.ackBy.Sub(now) > ackGatherMargin
}

// gatherAcks starts the runner's ackGatherer, with room for n results
// ahead of it, and returns what ends it once no uploader sends to it.
func (r *runner) gatherAcks(ctx context.Context, n int) (end func()) {
	r.wires.gather = make(chan *result, n)
	g := &ackGatherer{e: r.session, in: r.wires.gather, out: r.wires.results}
	var wg sync.WaitGroup
	wg.Go(func() { g.run(ctx) })
	return func() {
		close(r.wires.gather)
		wg.Wait()
	}
}

// ackGatherer acks the messages of the stored batches it is given in
// bursts, one confirmation per consumer and burst, and then hands the
// results to out. A burst goes when its window ends or when it is full.
// It is owned by the goroutine that runs run.
type ackGatherer struct {
	e   *session
	in  chan *result
	out chan<- *result
}

// run gathers until in is closed, and sends what it holds then.
func (g *ackGatherer) run(ctx context.Context) {
	var burst []*result
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case res, ok := <-g.in:
			if !ok {
				g.flush(ctx, burst)
				return
			}
			if len(burst) == 0 {
				timer.Reset(ackGatherWindow)
			}
			burst = append(burst, res)
			if len(burst) < ackGatherMax {
				continue
			}
			timer.Stop()
		case <-timer.C:
		}
		g.flush(ctx, burst)
		clear(burst)
		burst = burst[:0]
	}
}

// flush acks the burst's batches, consumer by consumer in the order they
// came, and sends the results on.
func (g *ackGatherer) flush(ctx context.Context, burst []*result) {
	var order []*streamWriter
	byStream := map[*streamWriter][]*result{}
	for _, res := range burst {
		s := res.job.stream
		if _, ok := byStream[s]; !ok {
			order = append(order, s)
		}
		byStream[s] = append(byStream[s], res)
	}
	for _, s := range order {
		results := byStream[s]
		batches := make([]*msgBatch, len(results))
		for i, res := range results {
			batches[i] = res.job.batch
		}
		err := g.e.ackBatches(ctx, batches)
		for _, res := range results {
			res.acked(g.e.log, err)
		}
	}
	for _, res := range burst {
		g.out <- res
	}
}
