package main

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// hostileMsg is one message a publisher who means harm sends: a subject
// under the stream's prefix, headers and data. Good messages are the
// well-formed ones published between the hostile ones: they must end in
// data objects whatever came before them.
type hostileMsg struct {
	Subject string
	Header  nats.Header
	Data    []byte
	Good    bool
	Draws   []string // what the message carries, e.g. "payload:deep-nesting", "header:Nats-Pin-Id"
}

// hostileGen draws hostile messages from a seed. It is pure: the same seed,
// prefix and time give the same messages, and it reads no clock.
//
// The connectors of the hostile test read these fields of a payload (the
// typed columns): tenant (string), created_at (timestamp, epoch ms), amount
// (int64), small (int32), score (double), ok (boolean), day (date), doc
// (json); and these headers: Region (a path value) and Event-Time (an event
// time in epoch seconds). The generator draws every JSON type into every one
// of them.
type hostileGen struct {
	rng    *rand.Rand
	prefix string    // subjects are prefix.<token>...
	now    time.Time // the event time of good messages
	n      int       // messages drawn so far
	msgIDs []string  // Nats-Msg-Id values drawn, to repeat
}

// newHostileGen returns a generator of messages for subjects under prefix,
// whose good messages have event time now.
func newHostileGen(seed uint64, prefix string, now time.Time) *hostileGen {
	return &hostileGen{rng: rand.New(rand.NewPCG(seed, 0x686f7374696c65)), prefix: prefix, now: now}
}

// hostileNATSHeaders are the Nats- headers a client may send, the ones
// nats-server 2.15 reads on a publish (stream.go, jetstream_api.go) and those
// it writes itself on messages it stores or delivers. The server refuses
// some publishes that carry them (an expectation that fails, a TTL on a
// stream without TTLs, a counter increment on a stream without counters, a
// schedule, a batch): those messages are not in the stream, which the
// publish acknowledgement says.
var hostileNATSHeaders = []string{
	"Nats-Msg-Id", "Nats-Expected-Stream", "Nats-Expected-Last-Sequence",
	"Nats-Expected-Last-Subject-Sequence", "Nats-Expected-Last-Subject-Sequence-Subject",
	"Nats-Expected-Last-Msg-Id", "Nats-Rollup", "Nats-TTL", "Nats-Marker-Reason",
	"Nats-Incr", "Nats-Counter-Sources", "Nats-Batch-Id", "Nats-Batch-Sequence",
	"Nats-Batch-Commit", "Nats-Schedule", "Nats-Schedule-Time-Zone", "Nats-Schedule-TTL",
	"Nats-Schedule-Rollup", "Nats-Schedule-Target", "Nats-Schedule-Source", "Nats-Scheduler",
	"Nats-Schedule-Next", "Nats-Stream-Source", "Nats-Pin-Id", "Nats-Required-Api-Level",
	"Nats-Msg-Size", "Nats-Stream", "Nats-Sequence", "Nats-Time-Stamp", "Nats-Subject",
	"Nats-Last-Sequence", "Nats-Num-Pending", "Nats-UpTo-Sequence", "Nats-Consumer-Stalled",
	"Nats-Last-Consumer", "Nats-Last-Stream", "Nats-Response-Type", "Nats-Trace-Dest",
	"Nats-Stream-Identity",
}

// The payload kinds the generator draws, one per hostile message.
var hostilePayloads = []string{
	"empty", "invalid-utf8", "invalid-utf8-in-json", "deep-nesting", "deep-nesting-in-column",
	"huge-numbers", "nan", "every-type", "segments", "long-string", "cardinality", "not-object",
	"duplicate-keys", "big", "event-time",
}

// The other things a hostile message may carry besides its payload.
var hostileExtras = []string{
	"subject:segment", "subject:long", "subject:many-tokens", "header:long-name",
	"header:repeated", "header:empty", "header:Region", "header:Event-Time",
}

// hostileSegments are values that would be trouble as path segments.
var hostileSegments = []string{
	"_jetlake", "_jetlake/lost", "_jetlakeX", "..", ".", "%2F", "%2E%2E", "/", "a/b", "a/../b", "\\",
	"__HIVE_DEFAULT_PARTITION__", "null", "", " ", "\u0000", "\u001b[2J", "\u202e", "ümlaut",
	"%", "~", "tenant=x", "?x=1", "#", "*", ">",
}

// hostileEventTimesMs are created_at values, for a timestamp column in
// epoch milliseconds, as JSON text; %d is the good time in milliseconds.
// Off by 1,000 either way, years before 1 (-1196, -156,000) and after 9999
// (14,645, 160,000), the edges of ±292,000 years (what an int64 of
// microseconds holds) and beyond, and values of other types.
var hostileEventTimesMs = []string{
	"%d/1000", "%d*1000", "%d*1000000", "9223372036854775", "-9223372036854775",
	"9223372036854776", "-9223372036854776", "9300000000000000", "-9300000000000000",
	"-38700000000000", "-100000000000000", "-5000000000000000", "5000000000000000", "400000000000000",
	"1e300", "-1e300", "0", "-1", "-62135596800001", "253402300800000", "1.5", `"%d"`,
	`"0001-01-01T00:00:00Z"`, `"9999-12-31T23:59:59.999999999Z"`, `"0000-01-01T00:00:00Z"`,
	`"-0001-01-01T00:00:00Z"`, `"2026-02-30T00:00:00Z"`, `"2026-12-04T10:00:00+23:59"`,
	`"292277026596-12-04T15:30:07Z"`, `""`, "true", "{}", "[]", "null",
}

// hostileEventTimesS are Event-Time header values, in epoch seconds; %d is
// the good time in seconds.
var hostileEventTimesS = []string{
	"%d*1000", "%d*1000000", "%d*1000000000", "%d/1000", "9223372036854", "-9223372036854",
	"9223372036855", "-9223372036855", "9300000000000", "1e400", "-1", "0", "-62135596801",
	"-100000000000", "-5000000000000", "5000000000000", "400000000000",
	"253402300800", "NaN", "Inf", "", " ", "0x10", "2026-12-04T10:00:00Z",
}

// next draws the next message: a good one about a third of the time.
func (g *hostileGen) next() hostileMsg {
	g.n++
	if g.rng.IntN(3) == 0 {
		return g.good()
	}
	m := hostileMsg{Subject: g.prefix + ".h" + strconv.Itoa(g.rng.IntN(4)), Header: nats.Header{}}
	kind := hostilePayloads[g.rng.IntN(len(hostilePayloads))]
	m.Draws = append(m.Draws, "payload:"+kind)
	m.Data = g.payload(kind)
	for range g.rng.IntN(4) {
		name := hostileNATSHeaders[g.rng.IntN(len(hostileNATSHeaders))]
		m.Draws = append(m.Draws, "header:"+name)
		m.Header[name] = append(m.Header[name], g.natsValue(name))
	}
	for _, extra := range hostileExtras {
		if g.rng.IntN(6) != 0 {
			continue
		}
		m.Draws = append(m.Draws, extra)
		g.extra(&m, extra)
	}
	return m
}

// good is a well-formed message: every column of its type, an event time
// and a region.
func (g *hostileGen) good() hostileMsg {
	ms := g.now.UnixMilli()
	return hostileMsg{
		Subject: fmt.Sprintf("%s.good%d", g.prefix, g.n%4),
		Header:  nats.Header{"Region": {[]string{"eu", "us", "ap"}[g.n%3]}, "Event-Time": {strconv.FormatInt(g.now.Unix(), 10)}},
		Data: fmt.Appendf(nil, `{"tenant":"t%d","created_at":%d,"amount":%d,"small":%d,"score":%d.5,"ok":true,"day":"%s","doc":{"n":%d}}`,
			g.n%5, ms, g.n, g.n%100, g.n, g.now.UTC().Format(time.DateOnly), g.n),
		Good:  true,
		Draws: []string{"good"},
	}
}

// payload draws the data of a hostile message of the given kind.
func (g *hostileGen) payload(kind string) []byte {
	ms := g.now.UnixMilli()
	switch kind {
	case "empty":
		return nil
	case "invalid-utf8":
		b := make([]byte, 1+g.rng.IntN(200))
		for i := range b {
			b[i] = byte(g.rng.IntN(256))
		}
		b[0] = 0xff
		return b
	case "invalid-utf8-in-json":
		return fmt.Appendf(nil, `{"tenant":"\xff\xfe%s","created_at":%d,"doc":"\xc3\x28"}`, "\x80", ms)
	case "deep-nesting":
		depth := 1000 + g.rng.IntN(100000)
		return []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
	case "deep-nesting-in-column":
		depth := 1000 + g.rng.IntN(20000)
		return fmt.Appendf(nil, `{"tenant":%s1%s,"created_at":%d,"doc":%s0%s}`,
			strings.Repeat(`{"a":`, depth), strings.Repeat("}", depth), ms, strings.Repeat("[", depth), strings.Repeat("]", depth))
	case "huge-numbers":
		nums := []string{"1e400", "-1e400", "1e-400", "123456789012345678901234567890123456789", "-0", "9223372036854775808", "-9223372036854775809", "2147483648", "1.7976931348623157e309"}
		return fmt.Appendf(nil, `{"tenant":%s,"created_at":%s,"amount":%s,"small":%s,"score":%s,"day":%s}`,
			g.pick(nums), g.pick(nums), g.pick(nums), g.pick(nums), g.pick(nums), g.pick(nums))
	case "nan":
		return fmt.Appendf(nil, `{"tenant":"t","created_at":%d,"score":%s,"amount":%s}`, ms, g.pick([]string{"NaN", "Infinity", "-Infinity", "nan", "+1"}), g.pick([]string{"NaN", "0x10", "1_000", ".5"}))
	case "every-type":
		var b strings.Builder
		b.WriteString("{")
		for i, col := range []string{"tenant", "created_at", "amount", "small", "score", "ok", "day", "doc"} {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%q:%s", col, g.anyValue())
		}
		b.WriteString("}")
		return []byte(b.String())
	case "segments":
		return fmt.Appendf(nil, `{"tenant":%s,"created_at":%d,"day":%s}`, jsonString(g.pick(hostileSegments)), ms, jsonString(g.pick(hostileSegments)))
	case "long-string":
		return fmt.Appendf(nil, `{"tenant":"%s","created_at":%d}`, strings.Repeat(string(rune('a'+g.rng.IntN(26))), 10<<10+g.rng.IntN(10<<10)), ms)
	case "cardinality":
		// A value of its own: as many directories as messages.
		return fmt.Appendf(nil, `{"tenant":"u%d-%d","created_at":%d,"amount":%d}`, g.n, g.rng.Uint32(), ms, g.n)
	case "not-object":
		return []byte(g.pick([]string{`"text"`, "42", "[1,2,3]", "true", "null", `{"tenant":`, "{}{}", " ", "\t{\"tenant\":\"a\"}\n"}))
	case "duplicate-keys":
		return fmt.Appendf(nil, `{"tenant":"a","tenant":"_jetlake","created_at":%d,"created_at":-9223372036854775}`, ms)
	case "big":
		return fmt.Appendf(nil, `{"tenant":"big","created_at":%d,"doc":"%s"}`, ms, strings.Repeat("x", 200<<10+g.rng.IntN(200<<10)))
	case "event-time":
		return fmt.Appendf(nil, `{"tenant":"t1","created_at":%s,"day":%s}`, g.eventTimeMs(), g.pick([]string{`"0001-01-01"`, `"9999-12-31"`, `"0000-00-00"`, `"2026-12-04"`, "20261204", `"-2026-12-04"`}))
	}
	panic("hostileGen: no payload kind " + kind)
}

// extra adds one of hostileExtras to m.
func (g *hostileGen) extra(m *hostileMsg, extra string) {
	switch extra {
	case "subject:segment":
		tokens := []string{"_jetlake", "%2F", "%2E%2E", "__HIVE_DEFAULT_PARTITION__", "ümlaut", "\xff\xfe", "~", "a%b", "_jetlake_", "null", "-", "=", "\u202e"}
		m.Subject = g.prefix + "." + g.pick(tokens)
	case "subject:long":
		m.Subject = g.prefix + "." + strings.Repeat("s", 200+g.rng.IntN(800))
	case "subject:many-tokens":
		m.Subject = g.prefix + strings.Repeat(".t", 2+g.rng.IntN(100))
	case "header:long-name":
		name := "X-" + strings.Repeat("N", 1000+g.rng.IntN(3000))
		m.Header[name] = []string{"v"}
	case "header:repeated":
		name := g.pick([]string{"Region", "Event-Time", "Nats-Pin-Id", "Nats-Msg-Id", "X-Dup"})
		for range 2 + g.rng.IntN(4) {
			m.Header[name] = append(m.Header[name], g.headerValue(name))
		}
	case "header:empty":
		m.Header[g.pick([]string{"Region", "Event-Time", "Nats-Pin-Id", "X-Empty"})] = []string{""}
	case "header:Region":
		m.Header["Region"] = []string{g.headerSafe(g.pick(hostileSegments))}
		if g.rng.IntN(4) == 0 {
			m.Header["Region"] = []string{strings.Repeat("r", 10<<10)}
		}
	case "header:Event-Time":
		m.Header["Event-Time"] = []string{g.eventTimeS()}
	default:
		panic("hostileGen: no extra " + extra)
	}
}

// natsValue draws a value of a Nats- header.
func (g *hostileGen) natsValue(name string) string {
	switch name {
	case "Nats-Msg-Id":
		if len(g.msgIDs) > 0 && g.rng.IntN(3) == 0 {
			return g.pick(g.msgIDs) // a duplicate: the server stores the first only
		}
		id := fmt.Sprintf("id-%d-%d", g.n, g.rng.Uint32())
		g.msgIDs = append(g.msgIDs, id)
		return id
	case "Nats-Pin-Id":
		return g.pick([]string{"forged", "", strings.Repeat("P", 4000), fmt.Sprintf("%016x", g.rng.Uint64()), "_jetlake"})
	case "Nats-TTL":
		// Long enough that nothing expires during a test, or not a TTL
		// (refused); a short TTL would make the server delete the
		// message, which is the server-written test's matter.
		return g.pick([]string{"1h", "24h", "never", "86400", "0", "-1", "abc", "1y", ""})
	case "Nats-Marker-Reason":
		return g.pick([]string{"MaxAge", "Purge", "Remove", "", "_jetlake"})
	case "Nats-Expected-Stream":
		return g.pick([]string{strings.ToUpper(g.prefix), "OTHER", ""})
	case "Nats-Rollup":
		return g.pick([]string{"sub", "all", "bogus"})
	case "Nats-Incr":
		return g.pick([]string{"1", "-5", "x", "99999999999999999999999"})
	}
	return g.headerValue(name)
}

// headerValue draws any header value: text, numbers, path trouble, long.
func (g *hostileGen) headerValue(string) string {
	switch g.rng.IntN(6) {
	case 0:
		return strconv.FormatInt(g.rng.Int64()-g.rng.Int64(), 10)
	case 1:
		return g.headerSafe(g.pick(hostileSegments))
	case 2:
		return strings.Repeat("v", 1+g.rng.IntN(8<<10))
	case 3:
		return ""
	case 4:
		return g.eventTimeS()
	}
	return fmt.Sprintf("%s.%d", g.prefix, g.rng.IntN(10))
}

// headerSafe keeps a value sendable as a header: NATS headers are lines,
// so CR and LF would end them (and the server would read another header);
// the rest goes through as it is.
func (g *hostileGen) headerSafe(v string) string {
	return strings.NewReplacer("\r", "", "\n", "").Replace(v)
}

// eventTimeMs draws a created_at value (JSON text) in epoch milliseconds.
func (g *hostileGen) eventTimeMs() string {
	return expandTime(g.pick(hostileEventTimesMs), g.now.UnixMilli())
}

// eventTimeS draws an Event-Time header value in epoch seconds.
func (g *hostileGen) eventTimeS() string {
	return expandTime(g.pick(hostileEventTimesS), g.now.Unix())
}

// expandTime fills a time pattern of hostileEventTimes*: %d, %d*k or %d/k.
func expandTime(pattern string, now int64) string {
	before, after, ok := strings.Cut(pattern, "%d")
	if !ok {
		return pattern
	}
	v := now
	if k, err := strconv.ParseInt(strings.TrimLeft(after, "*/\""), 10, 64); err == nil && len(after) > 1 && after[0] != '"' {
		if after[0] == '*' {
			v *= k
		} else {
			v /= k
		}
		after = ""
	}
	return before + strconv.FormatInt(v, 10) + after
}

// anyValue draws a JSON value of any type.
func (g *hostileGen) anyValue() string {
	switch g.rng.IntN(9) {
	case 0:
		return "null"
	case 1:
		return g.pick([]string{"true", "false"})
	case 2:
		return strconv.FormatInt(g.rng.Int64()-g.rng.Int64(), 10)
	case 3:
		return strconv.FormatFloat(g.rng.NormFloat64()*1e10, 'g', -1, 64)
	case 4:
		return jsonString(g.pick(hostileSegments))
	case 5:
		return `{"a":[1,{"b":null}]}`
	case 6:
		return `[1,"2",3.5,[]]`
	case 7:
		return g.eventTimeMs()
	}
	return jsonString(g.now.UTC().Format(time.RFC3339Nano))
}

func (g *hostileGen) pick(from []string) string { return from[g.rng.IntN(len(from))] }

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// The generator is a replayable oracle input: one seed gives one sequence
// of messages, another seed another, and a run of a few thousand messages
// draws every payload kind, every extra and every Nats- header, with about
// a third good messages, all of them sendable (header lines without CR or
// LF, names without ':' or spaces).
func TestHostileGeneratorIsDeterministicAndCoversEveryKind(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	draw := func(seed uint64, n int) []hostileMsg {
		g := newHostileGen(seed, "hg", now)
		out := make([]hostileMsg, n)
		for i := range out {
			out[i] = g.next()
		}
		return out
	}
	const n = 3000
	a, b, c := draw(42, n), draw(42, n), draw(43, n)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("seed 42 drew two different sequences")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 42 and 43 drew the same sequence")
	}
	seen := map[string]int{}
	good := 0
	for i, m := range a {
		if m.Good {
			good++
		}
		for _, d := range m.Draws {
			seen[d]++
		}
		if !strings.HasPrefix(m.Subject, "hg.") || strings.ContainsAny(m.Subject, " \t\r\n") || strings.Contains(m.Subject, "..") {
			t.Errorf("message %d: subject %q is not one the stream takes", i, m.Subject)
		}
		for name, vals := range m.Header {
			if name == "" || strings.ContainsAny(name, ": \t\r\n") {
				t.Errorf("message %d: header name %q can not be sent", i, name)
			}
			for _, v := range vals {
				if strings.ContainsAny(v, "\r\n") {
					t.Errorf("message %d: header %s value %q holds a line break", i, name, v)
				}
			}
		}
		if len(m.Data) > 512<<10 {
			t.Errorf("message %d: %d bytes of data, more than half of the default max_payload", i, len(m.Data))
		}
	}
	if good < n/5 || good > n/2 {
		t.Errorf("%d good messages of %d, want about a third", good, n)
	}
	var want []string
	for _, k := range hostilePayloads {
		want = append(want, "payload:"+k)
	}
	want = append(want, hostileExtras...)
	for _, h := range hostileNATSHeaders {
		want = append(want, "header:"+h)
	}
	for _, w := range want {
		if seen[w] == 0 {
			t.Errorf("%d messages drew no %s", n, w)
		}
	}
	// The event times reach before year 1, past 9999 and past ±292,000
	// years, and are off by 1,000 both ways.
	for _, v := range []string{"-100000000000000", "5000000000000000", "9300000000000000", "-9223372036854776", strconv.FormatInt(now.UnixMilli()*1000, 10), strconv.FormatInt(now.UnixMilli()/1000, 10)} {
		if !slices.Contains(hostileEventTimesMsExpanded(now), v) {
			t.Errorf("no created_at draws %s", v)
		}
	}
}

// hostileEventTimesMsExpanded is every created_at value the generator draws.
func hostileEventTimesMsExpanded(now time.Time) []string {
	var out []string
	for _, p := range hostileEventTimesMs {
		out = append(out, expandTime(p, now.UnixMilli()))
	}
	return out
}
