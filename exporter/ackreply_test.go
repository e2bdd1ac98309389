package exporter

import (
	"testing"
	"time"
)

func TestParseAckReplyReadsBothLayouts(t *testing.T) {
	ts := time.Date(2026, 11, 29, 7, 0, 0, 123456789, time.UTC).UnixNano()
	for _, tt := range []struct {
		reply string
		want  ackInfo
		ok    bool
	}{
		{"$JS.ACK.EVENTS.c.3.42.17.1764399600123456789.5", ackInfo{streamSeq: 42, delivered: 3, timestamp: 1764399600123456789, pending: 5}, true},
		{"$JS.ACK._.ACCHASH.EVENTS.c.1.42.17." + itoa(ts) + ".0.rnd", ackInfo{streamSeq: 42, delivered: 1, timestamp: ts}, true},
		{"$JS.ACK.hub.ACCHASH.EVENTS.c.2.7.7.1.9", ackInfo{streamSeq: 7, delivered: 2, timestamp: 1, pending: 9}, true},
		{"$JS.ACK.hub.ACCHASH.EVENTS.c.2.7.7.1.0.rnd.more", ackInfo{streamSeq: 7, delivered: 2, timestamp: 1}, true},
		{"$JS.ACK.EVENTS.c.3.42.17.1", ackInfo{}, false},                     // 8 tokens
		{"$JS.ACK.a.b.EVENTS.c.3.42.17.1", ackInfo{}, false},                 // 10 tokens
		{"$JS.ACK.EVENTS.c.x.42.17.1.5", ackInfo{}, false},                   // not a number
		{"$JS.ACK.EVENTS.c.3.18446744073709551616.17.1.5", ackInfo{}, false}, // overflow
		{"_INBOX.abc", ackInfo{}, false},
		{"", ackInfo{}, false},
	} {
		got, ok := parseAckReply(tt.reply)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseAckReply(%q) = %+v, %v; want %+v, %v", tt.reply, got, ok, tt.want, tt.ok)
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
			parseAckReply(reply)
		}
	}); n != 0 {
		t.Fatalf("%v allocations in 1000 calls", n)
	}
}

func FuzzParseAckReply(f *testing.F) {
	f.Add("$JS.ACK.EVENTS.c.3.42.17.1764399600123456789.5")
	f.Add("$JS.ACK._.ACCHASH.EVENTS.c.1.42.17.1.0.rnd")
	f.Fuzz(func(t *testing.T, reply string) {
		parseAckReply(reply)
	})
}
