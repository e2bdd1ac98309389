package jsclient

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
)

// AckInfo is what the exporter needs of a message's JetStream metadata.
type AckInfo struct {
	StreamSeq   uint64
	ConsumerSeq uint64 // the consumer's delivery sequence: 1 again after a reset
	Delivered   uint64
	Timestamp   int64  // unix nanoseconds
	Pending     uint64 // messages the consumer had still to deliver after this one
}

// ParseAckReply reads the metadata JetStream puts in a message's reply
// subject, as jetstream.Msg.Metadata does, without allocating:
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>
//	$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>[.<token>...]
func ParseAckReply(reply string) (AckInfo, bool) {
	rest, ok := strings.CutPrefix(reply, "$JS.ACK.")
	if !ok {
		return AckInfo{}, false
	}
	n := strings.Count(rest, ".") + 3 // tokens, $JS and ACK included
	skip := 0
	switch {
	case n == 9:
		skip = 2 // stream, consumer
	case n >= 11:
		skip = 4 // domain, account hash, stream, consumer
	default:
		return AckInfo{}, false
	}
	for range skip {
		_, rest, _ = strings.Cut(rest, ".")
	}
	var fields [5]uint64 // delivered, sseq, cseq, tm, pending
	for i := range fields {
		var tok string
		tok, rest, _ = strings.Cut(rest, ".")
		v, ok := parseUint(tok)
		if !ok {
			return AckInfo{}, false
		}
		fields[i] = v
	}
	return AckInfo{Delivered: fields[0], StreamSeq: fields[1], ConsumerSeq: fields[2], Timestamp: int64(fields[3]), Pending: fields[4]}, true
}

func parseUint(s string) (uint64, bool) {
	if s == "" || len(s) > 20 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// Acker sends acknowledgements to the server; *nats.Conn is one.
type Acker interface {
	Publish(subj string, data []byte) error
	RequestWithContext(ctx context.Context, subj string, data []byte) (*nats.Msg, error)
}

// AckRef is a delivered message's reply subject, all that acking it takes.
// Buffers and uploads keep it instead of the jetstream.Msg, so that a
// buffered message does not keep its delivery (payload, headers, subject)
// alive once the payload is encoded into a batch.
type AckRef string

// Bodies of the acknowledgements, as the server reads them.
var (
	ackBody        = []byte("+ACK")
	inProgressBody = []byte("+WPI")
)

// Mem is the memory one held message costs until it is acked: its reply
// subject, its item in a batch and its entry in the held set.
func (r AckRef) Mem() int64 { return int64(len(r)) + 64 }

// Ack acks the message. The ack goes out on the connection the message
// came on, after the acks sent before it.
func (r AckRef) Ack(nc Acker) error { return nc.Publish(string(r), ackBody) }

// InProgress restarts the message's AckWait clock.
func (r AckRef) InProgress(nc Acker) error { return nc.Publish(string(r), inProgressBody) }

// ConfirmInProgress restarts the message's AckWait clock and waits for the
// server's reply, which comes once the server has processed this and every
// acknowledgement sent before it on the same connection.
func (r AckRef) ConfirmInProgress(ctx context.Context, nc Acker) error {
	_, err := nc.RequestWithContext(ctx, string(r), inProgressBody)
	return err
}

// ConfirmAck acks the message and waits for the server's reply, which comes
// once the server has processed this ack and every ack sent before it on
// the same connection.
func (r AckRef) ConfirmAck(ctx context.Context, nc Acker) error {
	_, err := nc.RequestWithContext(ctx, string(r), ackBody)
	return err
}

// Term terminates the message: it is never redelivered.
func (r AckRef) Term(nc Acker, reason string) error {
	return nc.Publish(string(r), []byte("+TERM "+reason))
}

// Seq is the message's stream sequence.
func (r AckRef) Seq() uint64 {
	md, _ := ParseAckReply(string(r))
	return md.StreamSeq
}
