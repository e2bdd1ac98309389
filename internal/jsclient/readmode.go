package jsclient

import (
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// ReadMode is how jetlake reads a stream: with an acknowledgement for
// every message, or without any, the export record deciding what is
// exported and where the consumer goes on.
type ReadMode struct {
	// AckLess: the consumer takes no acks (AckPolicy none). The server
	// keeps no pending set for it and never redelivers: it is a position,
	// which jetlake moves back from its record after a crash, a batch not
	// stored, a takeover or a pin change.
	AckLess bool
	// Why says, for the plan and the log, why the stream reads this way.
	Why string
}

// ModeFor returns how a stream of retention r is read. A stream with
// limits retention keeps its messages whatever its consumers do, so
// jetlake reads it without acks. A work-queue stream takes explicit acks
// only and removes a message once it is acked; an interest stream removes
// a message once every consumer acked it, and a consumer without acks
// counts as having acked at delivery: both keep explicit acks, so that a
// message leaves the stream only after its object is stored.
func ModeFor(r jetstream.RetentionPolicy) ReadMode {
	switch r {
	case jetstream.LimitsPolicy:
		return ReadMode{AckLess: true, Why: "limits retention: the stream keeps its messages whatever the consumer acks, so the export record decides and the server keeps no pending set"}
	case jetstream.WorkQueuePolicy:
		return ReadMode{Why: "work-queue retention: the server takes explicit acks only, and removes a message once it is acked"}
	default:
		return ReadMode{Why: "interest retention: a consumer without acks would let the server remove a message at delivery, before its object is stored"}
	}
}

// Policy is the ack policy of the mode's consumer.
func (m ReadMode) Policy() jetstream.AckPolicy {
	if m.AckLess {
		return jetstream.AckNonePolicy
	}
	return jetstream.AckExplicitPolicy
}

// String names the mode as plan and the log do.
func (m ReadMode) String() string {
	if m.AckLess {
		return "ack-less"
	}
	return "with explicit acks"
}

// MetaDeliverFrom is the consumer metadata key holding the first sequence
// an ack-less consumer jetlake created delivered: every sequence below it
// was exported, or out of the connector's scope, when it was created. It
// is what such a consumer proves; its ack floor, which moves at delivery,
// proves nothing.
const MetaDeliverFrom = "jetlake_deliver_from"

// Proven returns the highest sequence the consumer ci describes shows
// exported, with everything below it: the ack floor of a consumer that
// takes acks; for an ack-less one, the sequence before the one it was
// created to deliver from (0 when jetlake did not create it).
func Proven(ci *jetstream.ConsumerInfo) uint64 {
	if ci == nil {
		return 0
	}
	if ci.Config.AckPolicy != jetstream.AckNonePolicy {
		return ci.AckFloor.Stream
	}
	from, err := strconv.ParseUint(ci.Config.Metadata[MetaDeliverFrom], 10, 64)
	if err != nil || from == 0 {
		return 0
	}
	return min(from-1, ci.AckFloor.Stream)
}
