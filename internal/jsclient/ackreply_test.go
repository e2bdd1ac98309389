package jsclient

import (
	"testing"
	"time"
)

func TestParseAckReplyReadsBothLayouts(t *testing.T) {
	ts := time.Date(2026, 11, 29, 7, 0, 0, 123456789, time.UTC).UnixNano()
	for _, tt := range []struct {
		reply string
		want  AckInfo
		ok    bool
	}{
		{"$JS.ACK.EVENTS.c.3.42.17.1764399600123456789.5", AckInfo{StreamSeq: 42, ConsumerSeq: 17, Delivered: 3, Timestamp: 1764399600123456789, Pending: 5}, true},
		{"$JS.ACK._.ACCHASH.EVENTS.c.1.42.17." + itoa(ts) + ".0.rnd", AckInfo{StreamSeq: 42, ConsumerSeq: 17, Delivered: 1, Timestamp: ts}, true},
		{"$JS.ACK.hub.ACCHASH.EVENTS.c.2.7.7.1.9", AckInfo{StreamSeq: 7, ConsumerSeq: 7, Delivered: 2, Timestamp: 1, Pending: 9}, true},
		{"$JS.ACK.hub.ACCHASH.EVENTS.c.2.7.7.1.0.rnd.more", AckInfo{StreamSeq: 7, ConsumerSeq: 7, Delivered: 2, Timestamp: 1}, true},
		{"$JS.ACK.EVENTS.c.3.42.17.1", AckInfo{}, false},                     // 8 tokens
		{"$JS.ACK.a.b.EVENTS.c.3.42.17.1", AckInfo{}, false},                 // 10 tokens
		{"$JS.ACK.EVENTS.c.x.42.17.1.5", AckInfo{}, false},                   // not a number
		{"$JS.ACK.EVENTS.c.3.18446744073709551616.17.1.5", AckInfo{}, false}, // overflow
		{"_INBOX.abc", AckInfo{}, false},
		{"", AckInfo{}, false},
	} {
		got, ok := ParseAckReply(tt.reply)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseAckReply(%q) = %+v, %v; want %+v, %v", tt.reply, got, ok, tt.want, tt.ok)
		}
	}
}

func itoa(n int64) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int64) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

func TestParseAckReplyDoesNotAllocate(t *testing.T) {
	reply := "$JS.ACK._.ACCHASH.EVENTS.c.1.42.17.1764399600123456789.0.rnd"
	// One run of 1000 calls, so that n is the exact total: AllocsPerRun
	// truncates its average to an integer.
	if n := testing.AllocsPerRun(1, func() {
		for range 1000 {
			ParseAckReply(reply)
		}
	}); n != 0 {
		t.Fatalf("%v allocations in 1000 calls", n)
	}
}

func FuzzParseAckReply(f *testing.F) {
	f.Add("$JS.ACK.EVENTS.c.3.42.17.1764399600123456789.5")
	f.Add("$JS.ACK._.ACCHASH.EVENTS.c.1.42.17.1.0.rnd")
	f.Fuzz(func(t *testing.T, reply string) {
		ParseAckReply(reply)
	})
}
