package exporter

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
)

// A pull problem sends the loop to look the consumer up, but a pin held by
// another instance is no problem: a standby's pulls are refused that way
// until the pin moves, and it must not be reported as unable to pull.
func TestAPinHeldElsewhereIsNoPullProblem(t *testing.T) {
	e := testExporter(t, &MemStore{})
	s := newStreamWriter(e, config.Stream{Stream: "S", Consumer: "c", Failover: config.FailoverPinned})
	r := newRunner(e, []*streamWriter{s})
	r.pullError(s, jetstream.ErrPinIDMismatch)
	if why := s.cur.pullTrouble.Load(); why != nil {
		t.Fatalf("pin held elsewhere reported as a pull problem: %s", *why)
	}
	r.pullError(s, jetstream.ErrConsumerDeleted)
	if s.cur.pullTrouble.Load() == nil {
		t.Fatal("a deleted consumer was not handed to the loop")
	}
}
