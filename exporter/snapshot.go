package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Snapshot is how far a connector got, for a progress display: what it
// exported since the process started and what its consumers still hold.
type Snapshot struct {
	Connector string
	// Exported counts the messages acked after the object holding them
	// was stored, since the process started (messages_acked_total).
	Exported uint64
	// Pending is what the consumers still hold for the connector, summed
	// over its streams and partitions: messages not delivered yet and
	// messages delivered and not acked yet (NumPending + NumAckPending,
	// the consumer_pending_messages and consumer_ack_pending_messages
	// gauges). The runner reads the consumers every 5 seconds, so Pending
	// lags Exported by up to that long. PendingKnown is false until every
	// stream's consumers have been read once; Pending is then 0.
	Pending      uint64
	PendingKnown bool
	// Done: Run returned with Options.UntilIdle's work done (see Done);
	// nothing is pending then, and Pending is 0.
	Done bool
}

// Snapshot returns how far the connector got. It reads the counters and
// gauges the exporter keeps for its metrics, and is safe to call from any
// goroutine, as often as a display redraws.
func (e *Exporter) Snapshot() Snapshot {
	s := Snapshot{Connector: e.cfg.Name, Done: e.done.Load()}
	acked, _ := sumOf(e.m.Acked, e.cfg.Name)
	s.Exported = uint64(acked)
	pending, seen := sumOf(e.m.Pending, e.cfg.Name)
	ackPending, _ := sumOf(e.m.AckPending, e.cfg.Name)
	s.PendingKnown = true
	for _, sc := range e.cfg.Streams {
		s.PendingKnown = s.PendingKnown && seen[sc.Stream]
	}
	if s.PendingKnown {
		s.Pending = uint64(pending + ackPending)
	}
	if s.Done {
		s.Pending, s.PendingKnown = 0, true
	}
	return s
}

// sumOf sums the series of a counter or gauge vector whose connector label
// is connector, and names the streams (the stream label) it found.
func sumOf(c prometheus.Collector, connector string) (float64, map[string]bool) {
	ch := make(chan prometheus.Metric, 16)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var sum float64
	streams := map[string]bool{}
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil {
			continue
		}
		var conn, stream string
		for _, l := range d.GetLabel() {
			switch l.GetName() {
			case "connector":
				conn = l.GetValue()
			case "stream":
				stream = l.GetValue()
			}
		}
		if conn != connector {
			continue
		}
		streams[stream] = true
		switch {
		case d.Counter != nil:
			sum += d.Counter.GetValue()
		case d.Gauge != nil:
			sum += d.Gauge.GetValue()
		}
	}
	return sum, streams
}
