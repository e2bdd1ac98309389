package exporter

import "strings"

// ackInfo is what the exporter needs of a message's JetStream metadata.
type ackInfo struct {
	streamSeq uint64
	delivered uint64
	timestamp int64 // unix nanoseconds
}

// parseAckReply reads the metadata JetStream puts in a message's reply
// subject, as jetstream.Msg.Metadata does, without allocating:
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>
//	$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<tm>.<pending>[.<token>...]
func parseAckReply(reply string) (ackInfo, bool) {
	rest, ok := strings.CutPrefix(reply, "$JS.ACK.")
	if !ok {
		return ackInfo{}, false
	}
	n := strings.Count(rest, ".") + 3 // tokens, $JS and ACK included
	skip := 0
	switch {
	case n == 9:
		skip = 2 // stream, consumer
	case n >= 11:
		skip = 4 // domain, account hash, stream, consumer
	default:
		return ackInfo{}, false
	}
	for range skip {
		_, rest, _ = strings.Cut(rest, ".")
	}
	var fields [4]uint64 // delivered, sseq, cseq, tm
	for i := range fields {
		var tok string
		tok, rest, _ = strings.Cut(rest, ".")
		v, ok := parseUint(tok)
		if !ok {
			return ackInfo{}, false
		}
		fields[i] = v
	}
	return ackInfo{delivered: fields[0], streamSeq: fields[1], timestamp: int64(fields[3])}, true
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
