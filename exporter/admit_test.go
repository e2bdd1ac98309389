package exporter

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/progress"
)

// pinnedMsg is a fake message carrying the server's pin id.
type pinnedMsg struct {
	*fakeMsg
	pin string
}

func (m *pinnedMsg) Headers() nats.Header { return nats.Header{jsclient.PinHeader: {m.pin}} }

// A stream admits a message by what it knows of its sequence and of the
// instance its consumer is pinned to.
func TestAStreamAdmitsWhatItHasNotWrittenAndParksDuringATakeover(t *testing.T) {
	e := testExporter(t, &MemStore{})
	newStream := func(pinned bool) *streamWriter {
		s := newStreamWriter(e, config.Stream{Stream: "S", Consumer: "c", AckWait: time.Minute})
		if pinned {
			s.cfg.Failover = config.FailoverPinned
			s.fence.pin = "P0"
		}
		s.book.Start(0, nil, 1, 0, false, false)
		return s
	}
	deliver := func(s *streamWriter, seq uint64, delivered uint64, pin string) (admission, string) {
		var msg delivery
		if pin == "" {
			msg.msg = &fakeMsg{seq: seq}
		} else {
			msg.msg = &pinnedMsg{fakeMsg: &fakeMsg{seq: seq}, pin: pin}
		}
		return s.classify(msg, jsclient.AckInfo{StreamSeq: seq, Delivered: delivered, Pending: 1})
	}

	s := newStream(false)
	if a, _ := deliver(s, 1, 1, ""); a != admitWrite {
		t.Fatalf("a new sequence: %d, want admitWrite", a)
	}
	if a, _ := deliver(s, 1, 2, ""); a != admitLeave {
		t.Errorf("a sequence held already, redelivered: %d, want admitLeave", a)
	}
	s.book.Found("i", progress.NewSeqs([]uint64{5}))
	if a, _ := deliver(s, 5, 2, ""); a != admitAckAgain {
		t.Errorf("a sequence in a stored object: %d, want admitAckAgain", a)
	}

	p := newStream(true)
	if a, pin := deliver(p, 7, 1, "P0"); a != admitWrite || pin != "" {
		t.Errorf("the pin this instance holds: %d, confirm %q; want admitWrite and nothing to confirm", a, pin)
	}
	if a, pin := deliver(p, 8, 1, "P1"); a != admitLeave || pin != "P1" || !p.fence.takingOver || len(p.fence.parked) != 1 {
		t.Errorf("a new pin: %d, confirm %q, taking over %v, %d parked; want admitLeave, P1 to confirm, a takeover and 1 parked",
			a, pin, p.fence.takingOver, len(p.fence.parked))
	}
	if a, pin := deliver(p, 9, 1, "P1"); a != admitLeave || pin != "" || len(p.fence.parked) != 2 {
		t.Errorf("during the takeover: %d, confirm %q, %d parked; want admitLeave, nothing more to confirm, 2 parked", a, pin, len(p.fence.parked))
	}

	q := newStream(true)
	q.fence.notPin = "P2"
	if a, pin := deliver(q, 3, 1, "P2"); a != admitLeave || pin != "" || q.fence.takingOver || len(q.fence.parked) != 0 {
		t.Errorf("a pin the server did not confirm: %d, confirm %q, taking over %v; want it left to the server", a, pin, q.fence.takingOver)
	}
}
