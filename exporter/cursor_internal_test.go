package exporter

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
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

// A delivery vouches for the sequences between it and the last one only
// when it directly follows it: the next consumer sequence, of the same
// pull, above it.
func TestADeliveryFollowsTheLastOnlyDirectlyAfterIt(t *testing.T) {
	type in struct{ pull, cseq, seq uint64 }
	tests := []struct {
		name  string
		steps []in
		want  uint64 // what the last step follows
	}{
		{"the next consumer sequence of the same pull", []in{{1, 7, 100}, {1, 8, 130}}, 100},
		{"a consumer sequence skipped: a delivery lost on the way", []in{{1, 7, 100}, {1, 9, 130}}, 0},
		{"another pull", []in{{1, 7, 100}, {2, 8, 130}}, 0},
		{"after a reset, consumer sequences start at 1 again", []in{{1, 7, 100}, {1, 1, 130}}, 0},
		{"one sent before a reset arrives after one sent since", []in{{1, 1, 90}, {1, 2, 95}, {1, 3, 100}, {1, 1, 50}, {1, 4, 130}}, 0},
		{"taken in again after it waited", []in{{1, 7, 100}, {0, 8, 130}}, 0},
		{"a lower sequence", []in{{1, 7, 100}, {1, 8, 90}}, 0},
		{"the first delivery", []in{{1, 1, 100}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o deliveryOrder
			var got uint64
			for _, st := range tt.steps {
				got = o.next(delivery{pull: st.pull}, jsclient.AckInfo{ConsumerSeq: st.cseq, StreamSeq: st.seq})
			}
			if got != tt.want {
				t.Fatalf("follows %d, want %d", got, tt.want)
			}
		})
	}
}

// An instance waits, to be idle, for nothing of a partition another
// instance holds: its holder tells. One it holds and is not pinned to yet
// keeps it from being idle until it looked at the consumer.
func TestIdleLeavesPartitionsHeldElsewhereToTheirHolders(t *testing.T) {
	e := testExporter(t, &MemStore{})
	s := newStreamWriter(e, config.Stream{Stream: "S", Consumer: "c-0", Failover: config.FailoverPinned})
	s.mode = jsclient.ModeFor(jetstream.LimitsPolicy)
	s.part = &partition{k: 0}
	r := newRunner(e, []*streamWriter{s})
	infos := []*jetstream.ConsumerInfo{{}}
	if !r.idle(context.Background(), infos) {
		t.Fatal("not idle, though the only partition is another instance's")
	}
	s.part.rev = 1 // held now, and not looked at yet
	if r.idle(context.Background(), infos) {
		t.Fatal("idle, though a partition it holds was not looked at")
	}
}
