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
		compression Compression
		ext         string
		contentType string
	}{
		{"the empty format is json_lines", "", "", "jsonl", "application/x-ndjson"},
		{"json_lines", JSONLines, "", "jsonl", "application/x-ndjson"},
		{"json_array", JSONArray, "", "json", "application/json"},
		{"raw", Raw, "", "bin", "application/octet-stream"},
		{"json_lines uncompressed", JSONLines, None, "jsonl", "application/x-ndjson"},
		{"json_lines with gzip", JSONLines, Gzip, "jsonl.gz", "application/gzip"},
		{"json_lines with zstd", JSONLines, Zstd, "jsonl.zst", "application/zstd"},
		{"json_array with gzip", JSONArray, Gzip, "json.gz", "application/gzip"},
		{"json_array with zstd", JSONArray, Zstd, "json.zst", "application/zstd"},
		{"raw with gzip", Raw, Gzip, "bin.gz", "application/gzip"},
		{"raw with zstd", Raw, Zstd, "bin.zst", "application/zstd"},
		{"parquet", Parquet, "", "parquet", "application/vnd.apache.parquet"},
		{"parquet with snappy", Parquet, Snappy, "parquet", "application/vnd.apache.parquet"},
		{"parquet with zstd", Parquet, Zstd, "parquet", "application/vnd.apache.parquet"},
		{"parquet with gzip", Parquet, Gzip, "parquet", "application/vnd.apache.parquet"},
		{"parquet uncompressed", Parquet, None, "parquet", "application/vnd.apache.parquet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(Options{Format: tt.format, Compression: tt.compression})
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
	for _, f := range []Format{"PARQUET", "JSON_LINES", "jsonl", " json_lines"} {
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

func TestNewRejectsOptionsTheFormatDoesNotTake(t *testing.T) {
	col := Column{Name: "id", Source: "id", Type: TypeInt64}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"snappy for json_lines", Options{Compression: Snappy},
			`formats: json_lines cannot be compressed with "snappy" (want "none", "gzip" or "zstd")`},
		{"an unknown codec", Options{Format: Raw, Compression: "lz4"},
			`formats: raw cannot be compressed with "lz4" (want "none", "gzip" or "zstd")`},
		{"an unknown codec for parquet", Options{Format: Parquet, Compression: "brotli"},
			`formats: parquet cannot be compressed with "brotli" (want "snappy", "zstd", "gzip" or "none")`},
		{"typed columns for json_lines", Options{Columns: []Column{col}},
			`formats: typed columns need the parquet format, not json_lines`},
		{"a row group size for raw", Options{Format: Raw, RowGroupSize: 1 << 20},
			`formats: a row group size needs the parquet format, not raw`},
		{"omitting the payload for json_array", Options{Format: JSONArray, OmitPayload: true},
			`formats: omitting the payload needs the parquet format, not json_array`},
		{"an exact payload for parquet", Options{Format: Parquet, ExactPayload: true},
			`formats: an exact payload needs the json_lines or json_array format, not parquet`},
		{"an exact payload for raw", Options{Format: Raw, Metadata: true, ExactPayload: true},
			`formats: an exact payload needs the json_lines or json_array format, not raw`},
		{"an exact payload without metadata", Options{Format: JSONArray, ExactPayload: true},
			`formats: an exact payload needs Metadata: without it a record is the payload alone`},
		{"an unknown type error policy for json_lines", Options{OnTypeError: "drop"},
			`formats: unknown type error policy "drop" (want "reject" or "null")`},
		{"an unknown type error policy", Options{Format: Parquet, OnTypeError: "skip"},
			`formats: unknown type error policy "skip" (want "reject" or "null")`},
		{"a negative row group size", Options{Format: Parquet, RowGroupSize: -1},
			`formats: row group size -1 is negative`},
		{"a column name with capitals", Options{Format: Parquet, Columns: []Column{{Name: "userId", Source: "a", Type: TypeString}}},
			`formats: column 1 ("userId"): a name must match [a-z_][a-z0-9_]*`},
		{"a column named like an envelope column", Options{Format: Parquet, Columns: []Column{{Name: "payload_base64", Source: "a", Type: TypeString}}},
			`formats: column 1 ("payload_base64"): the name is taken by an envelope column`},
		{"headers is taken even without Headers", Options{Format: Parquet, Columns: []Column{{Name: "headers", Source: "a", Type: TypeJSON}}},
			`formats: column 1 ("headers"): the name is taken by an envelope column`},
		{"a column name used twice", Options{Format: Parquet, Columns: []Column{col, col}},
			`formats: column 2 ("id"): the name is used twice`},
		{"an empty source", Options{Format: Parquet, Columns: []Column{{Name: "a", Type: TypeString}}},
			`formats: column 1 ("a"): source "" is not a dotted path of non-empty names`},
		{"an empty path segment", Options{Format: Parquet, Columns: []Column{{Name: "a", Source: "user..id", Type: TypeString}}},
			`formats: column 1 ("a"): source "user..id" is not a dotted path of non-empty names`},
		{"a trailing dot", Options{Format: Parquet, Columns: []Column{{Name: "a", Source: "user.", Type: TypeString}}},
			`formats: column 1 ("a"): source "user." is not a dotted path of non-empty names`},
		{"an unknown type", Options{Format: Parquet, Columns: []Column{{Name: "a", Source: "a", Type: "decimal"}}},
			`formats: column 1 ("a"): unknown type "decimal" (want string, int64, int32, double, boolean, timestamp, date or json)`},
		{"a unit for an int64", Options{Format: Parquet, Columns: []Column{{Name: "a", Source: "a", Type: TypeInt64, Unit: "ms"}}},
			`formats: column 1 ("a"): a unit is only for timestamp columns, not int64`},
		{"an unknown unit", Options{Format: Parquet, Columns: []Column{{Name: "a", Source: "a", Type: TypeTimestamp, Unit: "m"}}},
			`formats: column 1 ("a"): unknown unit "m" (want s, ms, us or ns)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("New error = %v, want %s", err, tt.want)
			}
		})
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
	body, err := bytesOf(b.Finish())
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
			first, err := bytesOf(b.Finish())
			if err != nil {
				t.Fatal(err)
			}
			want := string(first) // first is only valid until Reset
			if len(first) != size {
				t.Fatalf("Finish returned %d bytes, Size() said %d", len(first), size)
			}

			t.Run("Finish twice returns the same bytes", func(t *testing.T) {
				second, err := bytesOf(b.Finish())
				if err != nil || string(second) != want || b.Size() != size {
					t.Fatalf("second Finish = %q, %v (Size %d), want %q (Size %d)", second, err, b.Size(), want, size)
				}
			})
			t.Run("Append after Finish fails and changes nothing", func(t *testing.T) {
				if err := b.Append(rec(`1`)); !errors.Is(err, ErrFinished) {
					t.Fatalf("Append after Finish = %v, want ErrFinished", err)
				}
				if got, _ := bytesOf(b.Finish()); string(got) != want || b.Len() != 3 {
					t.Fatalf("body after a refused Append = %q (Len %d), want %q (Len 3)", got, b.Len(), want)
				}
			})
			t.Run("Reset empties the batch and gives its memory back", func(t *testing.T) {
				b.Reset()
				if b.Len() != 0 || b.Size() != empty || b.MemSize() != 0 {
					t.Fatalf("after Reset Len() = %d, Size() = %d, MemSize() = %d; want 0, %d, 0", b.Len(), b.Size(), b.MemSize(), empty)
				}
				for range 3 {
					if err := b.Append(rec(`{"i":1}`)); err != nil {
						t.Fatal(err)
					}
				}
				got, _ := bytesOf(b.Finish())
				if string(got) != want {
					t.Fatalf("body after Reset = %q, want %q", got, want)
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
	if got, _ := bytesOf(b.Finish()); string(got) != "a\n" {
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
		{Format: JSONLines, Compression: Gzip, Metadata: true},
		{Format: JSONArray, Compression: Zstd, Metadata: true},
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
		for range 4 {
			fill() // fill the pools, and warm every zstd encoder of the encoder
		}
		if raceEnabled {
			// The race detector makes sync.Pool drop some of what it is
			// given.
			continue
		}
		// One run of 20 fills, so that n is the exact total:
		// AllocsPerRun truncates its average to an integer.
		if n := testing.AllocsPerRun(1, func() {
			for range 20 {
				fill()
			}
		}); n != 0 {
			t.Errorf("%+v: %v allocations in 20 fills of a reused batch, want 0", opts, n)
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
	t.Parallel()
	// Enough records for compressed batches to compress chunks, which
	// update the encoder's ratio, while other batches read it.
	records := benchRecords(1500)
	for _, opts := range everyEncoding() {
		t.Run(encodingName(opts), func(t *testing.T) {
			t.Parallel()
			e, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			want := string(encodeBody(t, opts, records...))
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					b := e.NewBatch()
					for range 4 {
						b.Reset()
						for _, r := range records {
							_ = b.Append(r)
							_ = b.Size()
						}
						if got, _ := bytesOf(b.Finish()); string(got) != want {
							t.Errorf("body differs when batches are filled concurrently")
							return
						}
					}
				})
			}
			wg.Wait()
		})
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
			wb, _ := bytesOf(want.Finish())
			gb, _ := bytesOf(got.Finish())
			if string(gb) != string(wb) {
				t.Fatalf("body = %q, want %q", gb, wb)
			}
		})
	}
}
