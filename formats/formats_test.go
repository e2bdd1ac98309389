package formats

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 7, 0, 0, 123456789, time.UTC)

// rec returns a record of stream EVENTS, subject events.a and sequence 42 at
// t0 with the given data.
func rec(data string) *Record {
	return &Record{Stream: "EVENTS", Subject: "events.a", Sequence: 42, Time: t0, Data: []byte(data)}
}

// with returns a copy of r changed by f.
func with(r *Record, f func(*Record)) *Record {
	c := *r
	f(&c)
	return &c
}

func TestNew(t *testing.T) {
	tests := []struct {
		name        string
		format      Format
		ext         string
		contentType string
	}{
		{"the empty format is json_lines", "", "jsonl", "application/x-ndjson"},
		{"json_lines", JSONLines, "jsonl", "application/x-ndjson"},
		{"json_array", JSONArray, "json", "application/json"},
		{"raw", Raw, "bin", "application/octet-stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(Options{Format: tt.format})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := e.Ext(); got != tt.ext {
				t.Errorf("Ext() = %q, want %q", got, tt.ext)
			}
			if got := e.ContentType(); got != tt.contentType {
				t.Errorf("ContentType() = %q, want %q", got, tt.contentType)
			}
		})
	}
}

func TestNewRejectsUnknownFormats(t *testing.T) {
	for _, f := range []Format{"parquet", "JSON_LINES", "jsonl", " json_lines"} {
		_, err := New(Options{Format: f})
		if err == nil {
			t.Errorf("New(%q) succeeded, want an error", f)
			continue
		}
		if want := `formats: unknown format "` + string(f) + `"`; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("New(%q) error = %q, want it to start with %q", f, err, want)
		}
	}
}

func TestAppendJSONRecord(t *testing.T) {
	meta := Options{Metadata: true}
	metaHeaders := Options{Metadata: true, Headers: true}
	payloadOnly := Options{}
	const prefix = `{"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z",`
	tests := []struct {
		name string
		opts Options
		r    *Record
		want string
	}{
		{"metadata fields come in order", meta, rec(`{"id":1}`),
			prefix + `"payload":{"id":1}}`},
		{"quotes and backslashes are escaped", meta,
			with(rec(`1`), func(r *Record) { r.Stream = `EV"EN\TS`; r.Subject = `a."b".\c` }),
			`{"stream":"EV\"EN\\TS","subject":"a.\"b\".\\c","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":1}`},
		{"control characters are escaped", meta,
			with(rec(`1`), func(r *Record) { r.Subject = "\x00\x01\x1f\x7f\b\f\n\r\t" }),
			`{"stream":"EVENTS","subject":"\u0000\u0001\u001f` + "\x7f" + `\b\f\n\r\t","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":1}`},
		{"unicode is written as UTF-8 but line separators are escaped", meta,
			with(rec(`1`), func(r *Record) { r.Subject = "événements.日本.😀.\u2028\u2029" }),
			`{"stream":"EVENTS","subject":"événements.日本.😀.\u2028\u2029","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":1}`},
		{"invalid UTF-8 in a subject becomes U+FFFD", meta,
			with(rec(`1`), func(r *Record) { r.Subject = "a\xffb\xe6\x97" }),
			`{"stream":"EVENTS","subject":"a\ufffdb\ufffd\ufffd","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":1}`},
		{"sequence zero", meta, with(rec(`1`), func(r *Record) { r.Sequence = 0 }),
			`{"stream":"EVENTS","subject":"events.a","sequence":0,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":1}`},
		{"the largest sequence", meta, with(rec(`1`), func(r *Record) { r.Sequence = math.MaxUint64 }),
			`{"stream":"EVENTS","subject":"events.a","sequence":18446744073709551615,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":1}`},
		{"a timestamp without nanoseconds has nine zero digits", meta,
			with(rec(`1`), func(r *Record) { r.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }),
			`{"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"2026-01-02T03:04:05.000000000Z","payload":1}`},
		{"a timestamp with one nanosecond", meta,
			with(rec(`1`), func(r *Record) { r.Time = time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC) }),
			`{"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"2026-01-02T03:04:05.000000001Z","payload":1}`},
		{"a timestamp in another zone is written in UTC", meta,
			with(rec(`1`), func(r *Record) {
				r.Time = time.Date(2026, 11, 29, 0, 30, 0, 5000, time.FixedZone("UTC-8", -8*3600))
			}),
			`{"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"2026-11-29T08:30:00.000005000Z","payload":1}`},
		{"the zero time", meta, with(rec(`1`), func(r *Record) { r.Time = time.Time{} }),
			`{"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"0001-01-01T00:00:00.000000000Z","payload":1}`},
		{"headers are sorted by key with values in order", metaHeaders,
			with(rec(`1`), func(r *Record) {
				r.Headers = map[string][]string{"b": {"2", "1"}, "a": {"x"}, "A": {}, "Nats-Msg-Id": {"id-1"}}
			}),
			prefix + `"headers":{"A":[],"Nats-Msg-Id":["id-1"],"a":["x"],"b":["2","1"]},"payload":1}`},
		{"header keys and values are escaped", metaHeaders,
			with(rec(`1`), func(r *Record) {
				r.Headers = map[string][]string{"K\"\\": {"v\n\"q\"", "\x01\xff", "é"}}
			}),
			prefix + `"headers":{"K\"\\":["v\n\"q\"","\u0001\ufffd","é"]},"payload":1}`},
		{"headers are left out when the options say so", meta,
			with(rec(`1`), func(r *Record) { r.Headers = map[string][]string{"K": {"v"}} }),
			prefix + `"payload":1}`},
		{"headers are left out when the message has none", metaHeaders,
			with(rec(`1`), func(r *Record) { r.Headers = map[string][]string{} }),
			prefix + `"payload":1}`},
		{"big numbers keep their digits", meta, rec(`{"n":123456789012345678901234567890,"f":1.0e400,"g":-0.000}`),
			prefix + `"payload":{"n":123456789012345678901234567890,"f":1.0e400,"g":-0.000}}`},
		{"nested arrays and objects", meta, rec(`[[1,[2,[3]]],{"a":{"b":{"c":[]}}},{}]`),
			prefix + `"payload":[[1,[2,[3]]],{"a":{"b":{"c":[]}}},{}]}`},
		{"whitespace is dropped", meta, rec("\n { \"a\" :\t[ 1 ,\r\n 2 ] , \"s\" : \" x y \" } \n"),
			prefix + `"payload":{"a":[1,2],"s":" x y "}}`},
		{"string contents keep their escapes", meta, rec(`"\u00e9\/\"\\ é"`),
			prefix + `"payload":"\u00e9\/\"\\ é"}`},
		{"a top-level number", meta, rec(` -0.5e-3 `), prefix + `"payload":-0.5e-3}`},
		{"a top-level string", meta, rec(`"text"`), prefix + `"payload":"text"}`},
		{"a top-level true", meta, rec(`true`), prefix + `"payload":true}`},
		{"a top-level null", meta, rec(`null`), prefix + `"payload":null}`},
		{"empty data is null", meta, rec(``), prefix + `"payload":null}`},
		{"text is base64", meta, rec(`hello world`),
			prefix + `"payload":"aGVsbG8gd29ybGQ=","payload_encoding":"base64"}`},
		{"invalid JSON is base64", meta, rec(`{"a":}`),
			prefix + `"payload":"eyJhIjp9","payload_encoding":"base64"}`},
		{"whitespace alone is base64", meta, rec(" \n"),
			prefix + `"payload":"IAo=","payload_encoding":"base64"}`},
		{"invalid UTF-8 in a JSON string is base64", meta, rec("\"a\xffb\""),
			prefix + `"payload":"ImH/YiI=","payload_encoding":"base64"}`},
		{"a control character in a JSON string is base64", meta, rec("\"a\tb\""),
			prefix + `"payload":"ImEJYiI=","payload_encoding":"base64"}`},
		{"binary data is base64", meta, rec("\x00\x01\x02\xff"),
			prefix + `"payload":"AAEC/w==","payload_encoding":"base64"}`},
		{"headers come before a base64 payload", metaHeaders,
			with(rec("\x00\x01\x02\xff"), func(r *Record) { r.Headers = map[string][]string{"K": {"v"}} }),
			prefix + `"headers":{"K":["v"]},"payload":"AAEC/w==","payload_encoding":"base64"}`},
		{"without metadata a record is its payload", payloadOnly, rec(" {\"a\": [1, 2]} "), `{"a":[1,2]}`},
		{"without metadata a scalar is its payload", payloadOnly, rec(`12345678901234567890123`), `12345678901234567890123`},
		{"without metadata empty data is null", payloadOnly, rec(``), `null`},
		{"without metadata non-JSON is a base64 object", payloadOnly, rec("\x00\x01\x02\xff"),
			`{"payload":"AAEC/w==","payload_encoding":"base64"}`},
		{"without metadata headers are not written", Options{Headers: true},
			with(rec(`1`), func(r *Record) { r.Headers = map[string][]string{"K": {"v"}} }), `1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AppendJSONRecord([]byte("prefix"), tt.r, tt.opts)
			if want := "prefix" + tt.want; string(got) != want {
				t.Errorf("AppendJSONRecord =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// encode appends records to a new batch of opts and finishes it, checking
// Len and Size along the way.
func encode(t *testing.T, opts Options, records ...*Record) []byte {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b := e.NewBatch()
	for i, r := range records {
		if err := b.Append(r); err != nil {
			t.Fatalf("Append: %v", err)
		}
		if b.Len() != i+1 {
			t.Fatalf("Len() = %d after %d appends", b.Len(), i+1)
		}
	}
	size := b.Size()
	body, err := b.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if size != len(body) {
		t.Fatalf("Size() = %d before Finish, body has %d bytes", size, len(body))
	}
	return body
}

func TestBatchBodies(t *testing.T) {
	a, b, c := rec(`{"a":1}`), with(rec("x"), func(r *Record) { r.Sequence = 43 }), rec("")
	tests := []struct {
		name    string
		opts    Options
		records []*Record
		want    string
	}{
		{"an empty json_lines batch is empty", Options{Format: JSONLines}, nil, ``},
		{"json_lines ends every record with a newline", Options{Format: JSONLines}, []*Record{a, b, c},
			`{"a":1}` + "\n" + `{"payload":"eA==","payload_encoding":"base64"}` + "\n" + "null\n"},
		{"json_lines with metadata", Options{Format: JSONLines, Metadata: true}, []*Record{a},
			`{"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":{"a":1}}` + "\n"},
		{"an empty json_array batch is an empty array", Options{Format: JSONArray}, nil, `[]`},
		{"json_array with one record", Options{Format: JSONArray}, []*Record{a}, `[{"a":1}]`},
		{"json_array with three records", Options{Format: JSONArray}, []*Record{a, b, c},
			`[{"a":1},{"payload":"eA==","payload_encoding":"base64"},null]`},
		{"json_array with metadata", Options{Format: JSONArray, Metadata: true}, []*Record{a, b},
			`[{"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":{"a":1}},` +
				`{"stream":"EVENTS","subject":"events.a","sequence":43,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":"eA==","payload_encoding":"base64"}]`},
		{"raw without a delimiter concatenates data", Options{Format: Raw}, []*Record{a, b, c}, `{"a":1}x`},
		{"raw writes the delimiter after every message", Options{Format: Raw, RawDelimiter: []byte("\r\n")},
			[]*Record{a, b, c}, "{\"a\":1}\r\nx\r\n\r\n"},
		{"raw ignores metadata and headers", Options{Format: Raw, Metadata: true, Headers: true, RawDelimiter: []byte{0}},
			[]*Record{with(a, func(r *Record) { r.Headers = map[string][]string{"K": {"v"}} })}, "{\"a\":1}\x00"},
		{"an empty raw batch is empty", Options{Format: Raw, RawDelimiter: []byte("\n")}, nil, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := encode(t, tt.opts, tt.records...); string(got) != tt.want {
				t.Errorf("body =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestBatchLifecycle(t *testing.T) {
	for _, f := range []Format{JSONLines, JSONArray, Raw} {
		t.Run(string(f), func(t *testing.T) {
			e, err := New(Options{Format: f, Metadata: true})
			if err != nil {
				t.Fatal(err)
			}
			b := e.NewBatch()
			empty := 0
			if f == JSONArray {
				empty = len("[]")
			}
			if b.Size() != empty {
				t.Fatalf("Size() of an empty batch = %d, want %d", b.Size(), empty)
			}
			for i := range 3 {
				before := b.Size()
				if err := b.Append(rec(`{"i":1}`)); err != nil {
					t.Fatal(err)
				}
				if b.Size() <= before {
					t.Fatalf("Size() = %d after append %d, was %d", b.Size(), i, before)
				}
			}
			size := b.Size()
			first, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			want := string(first) // first is only valid until Reset
			if len(first) != size {
				t.Fatalf("Finish returned %d bytes, Size() said %d", len(first), size)
			}

			t.Run("Finish twice returns the same bytes", func(t *testing.T) {
				second, err := b.Finish()
				if err != nil || string(second) != want || b.Size() != size {
					t.Fatalf("second Finish = %q, %v (Size %d), want %q (Size %d)", second, err, b.Size(), want, size)
				}
			})
			t.Run("Append after Finish fails and changes nothing", func(t *testing.T) {
				if err := b.Append(rec(`1`)); !errors.Is(err, ErrFinished) {
					t.Fatalf("Append after Finish = %v, want ErrFinished", err)
				}
				if got, _ := b.Finish(); string(got) != want || b.Len() != 3 {
					t.Fatalf("body after a refused Append = %q (Len %d), want %q (Len 3)", got, b.Len(), want)
				}
			})
			t.Run("Reset empties the batch and keeps its memory", func(t *testing.T) {
				before := cap(first)
				b.Reset()
				if b.Len() != 0 || b.Size() != empty {
					t.Fatalf("after Reset Len() = %d, Size() = %d, want 0, %d", b.Len(), b.Size(), empty)
				}
				for range 3 {
					if err := b.Append(rec(`{"i":1}`)); err != nil {
						t.Fatal(err)
					}
				}
				got, _ := b.Finish()
				if string(got) != want {
					t.Fatalf("body after Reset = %q, want %q", got, want)
				}
				if cap(got) != before || &got[0] != &first[0] {
					t.Fatalf("Reset did not keep the batch's memory")
				}
			})
		})
	}
}

func TestNewCopiesTheDelimiter(t *testing.T) {
	delim := []byte("\n")
	e, err := New(Options{Format: Raw, RawDelimiter: delim})
	if err != nil {
		t.Fatal(err)
	}
	delim[0] = '!'
	b := e.NewBatch()
	if err := b.Append(rec("a")); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Finish(); string(got) != "a\n" {
		t.Fatalf("body = %q after the caller changed its delimiter, want %q", got, "a\n")
	}
}

func TestSteadyStateAppendDoesNotAllocate(t *testing.T) {
	records := make([]*Record, 100)
	for i := range records {
		records[i] = with(rec(` {"id": 12345, "name": "order", "items": [1, 2, 3], "big": 1e400} `), func(r *Record) {
			r.Sequence = uint64(i)
			r.Headers = map[string][]string{"b": {"2"}, "a": {"1"}}
		})
	}
	for _, opts := range []Options{
		{Format: JSONLines, Metadata: true},
		{Format: JSONArray, Metadata: true},
		{Format: JSONLines, Metadata: true, Headers: true},
		{Format: JSONLines},
		{Format: Raw, RawDelimiter: []byte("\n")},
	} {
		e, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		b := e.NewBatch()
		fill := func() {
			b.Reset()
			for _, r := range records {
				if err := b.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.Finish(); err != nil {
				t.Fatal(err)
			}
		}
		fill() // grow the batch once
		if n := testing.AllocsPerRun(20, fill); n != 0 {
			t.Errorf("%+v: %v allocations per reused batch, want 0", opts, n)
		}
	}
}

func TestAppendLeavesEarlierRecordsAlone(t *testing.T) {
	// A record whose payload is rejected part-way must not leave bytes
	// behind: the encoder writes it as base64 after truncating.
	got := encode(t, Options{Format: JSONLines}, rec(`{"a":[1,2,{"b":"c"}] x`), rec(`[1`))
	want := `{"payload":"eyJhIjpbMSwyLHsiYiI6ImMifV0geA==","payload_encoding":"base64"}` + "\n" +
		`{"payload":"WzE=","payload_encoding":"base64"}` + "\n"
	if !bytes.Equal(got, []byte(want)) {
		t.Fatalf("body =\n%s\nwant\n%s", got, want)
	}
}

func TestAppendTimestampMatchesTheTimePackage(t *testing.T) {
	tests := []time.Time{
		{},
		t0,
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(999, 2, 3, 4, 5, 6, 7, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 12, 31, 23, 30, 0, 100, time.FixedZone("UTC-1", -3600)),
		time.Date(2027, 1, 1, 0, 30, 0, 0, time.FixedZone("UTC+14", 14*3600)),
		time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, math.MaxInt64),
		time.Unix(0, math.MinInt64),
	}
	for _, tm := range tests {
		got := string(appendTimestamp(nil, tm))
		if want := tm.UTC().Format(timestampLayout); got != want {
			t.Errorf("appendTimestamp(%v) = %q, want %q", tm, got, want)
		}
	}
}

func TestAnEncoderIsSafeForConcurrentUse(t *testing.T) {
	for _, opts := range []Options{
		{Format: JSONArray, Metadata: true, Headers: true},
		{Format: Raw, RawDelimiter: []byte("\n")},
	} {
		e, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		r := with(rec(`{"a":1}`), func(r *Record) { r.Headers = map[string][]string{"b": {"2"}, "a": {"1"}} })
		want := string(encode(t, opts, r, r))
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 100 {
					b := e.NewBatch()
					_ = b.Append(r)
					_ = b.Append(r)
					if got, _ := b.Finish(); string(got) != want {
						t.Errorf("body = %q, want %q", got, want)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}

func TestDropLastRemovesOnlyTheLastRecord(t *testing.T) {
	for _, f := range []Format{JSONLines, JSONArray, Raw} {
		t.Run(string(f), func(t *testing.T) {
			enc, err := New(Options{Format: f, Metadata: true, RawDelimiter: []byte("\n")})
			if err != nil {
				t.Fatal(err)
			}
			want := enc.NewBatch()
			got := enc.NewBatch()
			rec := func(seq uint64) *Record {
				return &Record{Stream: "S", Subject: "a", Sequence: seq, Data: []byte(`{"n":1}`)}
			}
			for seq := uint64(1); seq <= 2; seq++ {
				if err := want.Append(rec(seq)); err != nil {
					t.Fatal(err)
				}
			}
			for seq := uint64(1); seq <= 3; seq++ {
				if err := got.Append(rec(seq)); err != nil {
					t.Fatal(err)
				}
			}
			got.DropLast()
			got.DropLast() // only once: the second call does nothing
			if got.Len() != 2 || got.Size() != want.Size() {
				t.Fatalf("after DropLast: %d records, %d bytes; want 2, %d", got.Len(), got.Size(), want.Size())
			}
			wb, _ := want.Finish()
			gb, _ := got.Finish()
			if string(gb) != string(wb) {
				t.Fatalf("body = %q, want %q", gb, wb)
			}
		})
	}
}
