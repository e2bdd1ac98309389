package formats

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
)

// recordsToRestore covers what a message may be: JSON with whitespace,
// strings with escapes, numbers no float holds, text that is not JSON,
// binary data, empty data, headers with repeated and empty values, times
// with nanoseconds and in other zones, unicode in streams and subjects.
func recordsToRestore() []*Record {
	cet := time.FixedZone("CET", 3600)
	return []*Record{
		{Stream: "ORDERS", Subject: "orders.created", Sequence: 1, Time: t0,
			Headers: map[string][]string{"Nats-Msg-Id": {"o-1"}, "X-Dup": {"a", "a", "b"}, "X-Empty": {""}, "X-Many": {"", "x", ""}},
			Data:    []byte("{ \"id\" : 1,\n\t\"items\": [ {\"sku\": \"A-1\", \"qty\": 2} ] , \"note\": null }\n")},
		{Stream: "ORDERS", Subject: "orders.string", Sequence: 2, Time: time.Date(2026, 11, 29, 8, 0, 0, 1, cet),
			Data: []byte(` "caf\u00e9 \"q\" \\ \/ \n \ud83d\ude00 é \u2028" `)},
		{Stream: "ORDERS", Subject: "orders.big", Sequence: 3, Time: time.Date(2026, 11, 29, 7, 59, 59, 999999999, time.UTC),
			Data: []byte("[123456789012345678901234567890, -0.000000000000000000000001, 1.0e400, 1E-400, 9007199254740993, -0]")},
		{Stream: "ORDERS", Subject: "orders.number", Sequence: 4, Time: time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
			Data: []byte("\r\n 12345678901234567890.12345678901234567890e+0012 \r\n")},
		{Stream: "ORDERS", Subject: "orders.text", Sequence: 5, Time: t0.Add(time.Nanosecond),
			Headers: map[string][]string{"Content-Type": {"text/plain"}},
			Data:    []byte("plain text, not JSON\n")},
		{Stream: "ORDERS", Subject: "orders.binary", Sequence: 6, Time: t0.Add(999 * time.Nanosecond),
			Data: []byte("\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")},
		{Stream: "ORDERS", Subject: "orders.badutf8json", Sequence: 7, Time: t0,
			Data: []byte("{\"a\":\"\xff\"}")},
		{Stream: "ORDERS", Subject: "orders.empty", Sequence: 8, Time: t0,
			Headers: map[string][]string{"X-Only": {""}}},
		{Stream: "ÉVÉNEMENTS", Subject: "événements.日本.\u2028.\"q\"", Sequence: 9, Time: t0,
			Headers: map[string][]string{"Ключ": {"значение", "日本"}, "X-List": {}},
			Data:    []byte(`{"名前":"テスト"}`)},
		{Stream: "S\xff", Subject: "s.\xfe\x00", Sequence: math.MaxInt64, Time: time.Unix(1<<33, 123456789),
			Headers: map[string][]string{"X-Bin": {"\x00\xff"}},
			Data:    []byte("null")},
		{Stream: "ORDERS", Subject: "orders.emptyjson", Sequence: 11, Time: t0,
			Data: []byte(" [ ] ")},
	}
}

// restoreEncodings are the encodings ReadRecords reads back, each with and
// without headers, the JSON formats with and without exact payloads.
func restoreEncodings() []Options {
	var all []Options
	for _, headers := range []bool{false, true} {
		for _, f := range []Format{JSONLines, JSONArray} {
			for _, c := range []Compression{None, Gzip, Zstd} {
				for _, exact := range []bool{false, true} {
					all = append(all, Options{Format: f, Compression: c, Metadata: true, Headers: headers, ExactPayload: exact})
				}
			}
		}
		for _, c := range []Compression{Snappy, Zstd, Gzip, None} {
			all = append(all, Options{Format: Parquet, Compression: c, Headers: headers})
		}
		all = append(all, Options{Format: Parquet, Headers: headers, Columns: allTypes, OnTypeError: NullTypeErrors})
	}
	return all
}

// restoreName names an encoding in test names.
func restoreName(o Options) string {
	name := string(o.Format) + "/" + string(o.Compression)
	if o.Headers {
		name += "/headers"
	}
	if len(o.Columns) > 0 {
		name += "/typed"
	}
	if o.ExactPayload {
		name += "/exact"
	}
	return name
}

// objectKey returns a key for an object of opts.
func objectKey(t testing.TB, opts Options) string {
	t.Helper()
	ext, _, err := ObjectType(opts)
	if err != nil {
		t.Fatal(err)
	}
	return "EVENTS/2026/11/29/1-9." + ext
}

// readAll reads back every record of body with ReadRecords, copied.
func readAll(t testing.TB, key string, body []byte) ([]Record, error) {
	t.Helper()
	var got []Record
	err := ReadRecords(key, bytes.NewReader(body), int64(len(body)), func(r *Record) error {
		c := *r
		c.Data = bytes.Clone(r.Data)
		got = append(got, c)
		return nil
	})
	return got, err
}

// wantData is what ReadRecords gives back for data written in format f:
// the JSON value compacted (json.Compact is the reference), nothing for the
// JSON literal null in the JSON formats, where it is the null of an empty
// payload, and the bytes themselves otherwise.
func wantData(data []byte, f Format) []byte {
	if len(data) == 0 {
		return nil
	}
	var b bytes.Buffer
	if utf8.Valid(data) && json.Compact(&b, data) == nil {
		if f != Parquet && b.String() == "null" {
			return nil
		}
		return b.Bytes()
	}
	return data
}

// wantRecord is what ReadRecords gives back for r written with opts: with
// Options.ExactPayload, the data itself.
func wantRecord(r *Record, opts Options) Record {
	w := Record{
		Stream:   validString(r.Stream),
		Subject:  validString(r.Subject),
		Sequence: r.Sequence,
		Time:     r.Time.UTC(),
		Data:     wantData(r.Data, opts.Format),
	}
	if opts.ExactPayload && len(r.Data) > 0 {
		w.Data = r.Data
	}
	if opts.Format == Parquet {
		w.Time = w.Time.Truncate(time.Microsecond)
	}
	if opts.Headers && len(r.Headers) > 0 {
		w.Headers = make(map[string][]string, len(r.Headers))
		for k, vs := range r.Headers {
			valid := make([]string, 0, len(vs))
			for _, v := range vs {
				valid = append(valid, validString(v))
			}
			w.Headers[validString(k)] = valid
		}
	}
	return w
}

// checkRecords compares what ReadRecords read with what was written.
func checkRecords(t *testing.T, opts Options, got []Record, written []*Record) {
	t.Helper()
	if len(got) != len(written) {
		t.Fatalf("read %d records, wrote %d", len(got), len(written))
	}
	for i, r := range written {
		w, g := wantRecord(r, opts), got[i]
		if g.Stream != w.Stream || g.Subject != w.Subject || g.Sequence != w.Sequence {
			t.Errorf("record %d: %q %q %d, want %q %q %d", i, g.Stream, g.Subject, g.Sequence, w.Stream, w.Subject, w.Sequence)
		}
		if !g.Time.Equal(w.Time) || g.Time.Location() != time.UTC {
			t.Errorf("record %d: time %v, want %v in UTC", i, g.Time, w.Time)
		}
		if !reflect.DeepEqual(g.Headers, w.Headers) {
			t.Errorf("record %d: headers %q, want %q", i, g.Headers, w.Headers)
		}
		if !bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) {
			t.Errorf("record %d: data %q, want %q", i, g.Data, w.Data)
		}
	}
}

func TestReadRecordsRoundTripsEveryEncoding(t *testing.T) {
	written := recordsToRestore()
	for _, opts := range restoreEncodings() {
		t.Run(restoreName(opts), func(t *testing.T) {
			body := encodeBody(t, opts, written...)
			got, err := readAll(t, objectKey(t, opts), body)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, opts, got, written)
		})
	}
}

// Data is what the object holds, byte for byte: the payload field of a JSON
// record, the payload column of a parquet file (as Arrow reads them).
func TestReadRecordsGivesThePayloadTheObjectHolds(t *testing.T) {
	written := recordsToRestore()
	t.Run("json_lines", func(t *testing.T) {
		opts := Options{Metadata: true, Headers: true}
		body := encodeBody(t, opts, written...)
		got, err := readAll(t, "o.jsonl", body)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
		for i, line := range lines {
			payload, _ := expectedPayload(written[i].Data)
			if bytes.HasSuffix(line, []byte(`,"payload_encoding":"base64"}`)) {
				continue // the bytes themselves, checked by the round trip
			}
			if !bytes.HasSuffix(line, []byte(`,"payload":`+payload+`}`)) {
				t.Fatalf("line %d: %s does not end with the payload %s", i+1, line, payload)
			}
			if payload == "null" {
				payload = ""
			}
			if string(got[i].Data) != payload {
				t.Errorf("line %d: data %q, the line holds %s", i+1, got[i].Data, payload)
			}
		}
	})
	t.Run("parquet", func(t *testing.T) {
		opts := Options{Format: Parquet, Headers: true}
		body := encodeBody(t, opts, written...)
		got, err := readAll(t, "o.parquet", body)
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range readParquet(t, body).Rows {
			if p, ok := row["payload"].(string); ok && string(got[i].Data) != p {
				t.Errorf("row %d: data %q, the payload column holds %q", i+1, got[i].Data, p)
			}
			if i < len(written) && written[i].Subject == "orders.text" && string(got[i].Data) != "plain text, not JSON\n" {
				t.Errorf("row %d: text that is not JSON comes back as %q", i+1, got[i].Data)
			}
		}
	})
}

// The objects committed as golden files, written by earlier versions of
// the encoders, read back.
func TestReadRecordsReadsTheGoldenObjects(t *testing.T) {
	for _, tt := range []struct {
		file, key string
		opts      Options
	}{
		{"json_lines.golden", "o.jsonl", Options{Format: JSONLines, Metadata: true, Headers: true}},
		{"json_lines.gz.golden", "o.jsonl.gz", Options{Format: JSONLines, Metadata: true, Headers: true}},
		{"json_lines.zst.golden", "o.jsonl.zst", Options{Format: JSONLines, Metadata: true, Headers: true}},
		{"json_array.golden", "o.json", Options{Format: JSONArray, Metadata: true, Headers: true}},
		{"json_array.gz.golden", "o.json.gz", Options{Format: JSONArray, Metadata: true, Headers: true}},
		{"json_array.zst.golden", "o.json.zst", Options{Format: JSONArray, Metadata: true, Headers: true}},
		{"json_lines_exact.golden", "o.jsonl", Options{Format: JSONLines, Metadata: true, Headers: true, ExactPayload: true}},
		{"json_array_exact.golden", "o.json", Options{Format: JSONArray, Metadata: true, ExactPayload: true}},
		{"parquet_snappy.golden", "o.parquet", Options{Format: Parquet, Headers: true}},
		{"parquet_zstd.golden", "o.parquet", Options{Format: Parquet, Headers: true}},
		{"parquet_gzip.golden", "o.parquet", Options{Format: Parquet, Headers: true}},
		{"parquet_none.golden", "o.parquet", Options{Format: Parquet, Headers: true}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			written := goldenRecords()
			if tt.opts.Format == Parquet {
				written[len(written)-1].Sequence = math.MaxInt64
			}
			got, err := readAll(t, tt.key, body)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, tt.opts, got, written)
		})
	}
}

func TestReadRecordsWithoutEnvelope(t *testing.T) {
	var keys []string
	var bodies [][]byte
	for _, f := range []Format{JSONLines, JSONArray, Raw} {
		for _, c := range []Compression{None, Gzip, Zstd} {
			opts := Options{Format: f, Compression: c, RawDelimiter: []byte("\n")}
			keys = append(keys, objectKey(t, opts))
			bodies = append(bodies, encodeBody(t, opts, recordsToRestore()...))
		}
	}
	// Payloads that are objects, alone or carrying base64, are no records.
	keys = append(keys, "o.jsonl", "o.jsonl", "o.json")
	bodies = append(bodies,
		[]byte("{\"payload\":\"AA==\",\"payload_encoding\":\"base64\"}\n"),
		[]byte("{\"stream\":\"S\",\"subject\":\"s\",\"timestamp\":\"2026-11-29T07:00:00.000000000Z\",\"payload\":null}\n"),
		[]byte(`[{"id":1}]`))
	for i, key := range keys {
		t.Run(key, func(t *testing.T) {
			calls := 0
			err := ReadRecords(key, bytes.NewReader(bodies[i]), int64(len(bodies[i])), func(*Record) error {
				calls++
				return nil
			})
			if !errors.Is(err, ErrNoEnvelope) || calls != 0 {
				t.Fatalf("%d records, %v; want ErrNoEnvelope", calls, err)
			}
			if !strings.HasPrefix(err.Error(), key+": ") || !strings.Contains(err.Error(), "include_metadata") {
				t.Errorf("%q does not name the key and include_metadata", err)
			}
			if !strings.HasSuffix(key, ".bin") && !strings.HasSuffix(key, ".bin.gz") && !strings.HasSuffix(key, ".bin.zst") {
				if !strings.Contains(err.Error(), " 1: ") {
					t.Errorf("%q does not name the first line or element", err)
				}
			}
		})
	}
}

func TestReadRecordsWithoutPayloadColumns(t *testing.T) {
	body := encodeBody(t, Options{Format: Parquet, OmitPayload: true, Headers: true, Columns: allTypes}, recordsToRestore()...)
	got, err := readAll(t, "o/1-9.parquet", body)
	if !errors.Is(err, ErrNoPayload) || len(got) != 0 || !strings.HasPrefix(err.Error(), "o/1-9.parquet: ") {
		t.Fatalf("%d records, %v; want ErrNoPayload naming the key", len(got), err)
	}
}

// fn's error stops the read at once and comes back unwrapped.
func TestReadRecordsStopsAtTheErrorOfFn(t *testing.T) {
	stop := errors.New("stop")
	for _, opts := range restoreEncodings() {
		t.Run(restoreName(opts), func(t *testing.T) {
			body := encodeBody(t, opts, recordsToRestore()...)
			var seqs []uint64
			err := ReadRecords(objectKey(t, opts), bytes.NewReader(body), int64(len(body)), func(r *Record) error {
				seqs = append(seqs, r.Sequence)
				if len(seqs) == 3 {
					return stop
				}
				return nil
			})
			if err != stop || !reflect.DeepEqual(seqs, []uint64{1, 2, 3}) {
				t.Fatalf("%v after %v; want stop after 1, 2, 3", err, seqs)
			}
		})
	}
}

// manyRecords returns n records of about size bytes each, JSON and binary
// in turn.
func manyRecords(n, size int) []*Record {
	out := make([]*Record, n)
	for i := range out {
		data := []byte(fmt.Sprintf(`{"i": %d, "pad": "%s"}`, i, strings.Repeat(string(rune('a'+i%26)), size)))
		if i%3 == 2 {
			data = bytes.Repeat([]byte{0xff, byte(i)}, size/2)
		}
		out[i] = &Record{Stream: "BIG", Subject: fmt.Sprintf("big.%d", i%7), Sequence: uint64(i + 1),
			Time: t0.Add(time.Duration(i) * time.Microsecond), Data: data}
	}
	return out
}

// Objects of many chunks, frames and row groups, with records larger than
// the read buffer, read back whole and in order; the zstd decoder's bounded
// window does not stop frames of a chunk and a large record.
func TestReadRecordsOfLargeObjects(t *testing.T) {
	written := manyRecords(3000, 700)
	written[10].Data = bytes.Repeat([]byte(`[1, 2] `), 1<<18)[:7*(1<<18)-1] // compacts to 4 bytes less per element
	written[20].Data = []byte(`"` + strings.Repeat("x", 3<<20) + `"`)
	written[21].Data = bytes.Repeat([]byte{0}, 3<<20)
	for _, opts := range []Options{
		{Format: JSONLines, Metadata: true},
		{Format: JSONLines, Compression: Gzip, Metadata: true},
		{Format: JSONLines, Compression: Zstd, Metadata: true},
		{Format: JSONArray, Metadata: true},
		{Format: JSONArray, Compression: Gzip, Metadata: true},
		{Format: JSONArray, Compression: Zstd, Metadata: true},
		{Format: Parquet, RowGroupSize: 64 << 10},
	} {
		t.Run(restoreName(opts), func(t *testing.T) {
			body := encodeBody(t, opts, written...)
			key := objectKey(t, opts)
			var got []Record
			err := readRecords(key, bytes.NewReader(body), int64(len(body)), func(r *Record) error {
				c := *r
				c.Data = bytes.Clone(r.Data)
				got = append(got, c)
				return nil
			}, 5<<20)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, opts, got, written)
		})
	}
}

// errReaderAt fails every read.
type errReaderAt struct{}

func (errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, errors.New("connection reset") }

func TestReadRecordsErrorsNameTheKeyAndTheRecord(t *testing.T) {
	line := func(seq int, rest string) string {
		return fmt.Sprintf(`{"stream":"S","subject":"s","sequence":%d,"timestamp":"2026-11-29T07:00:00.123456789Z"%s}`, seq, rest)
	}
	ok := line(1, `,"payload":{"a":1}`)
	gz := func(s string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write([]byte(s))
		_ = zw.Close()
		return b.String()
	}
	long := line(2, `,"payload":"`+strings.Repeat("x", 2000)+`"`)
	tests := []struct {
		name, key, body string
		maxRecord       int
		want            string
	}{
		{"unknown extension", "o.csv", ok, 0, "o.csv: not an object this package writes"},
		{"bad JSON", "o.jsonl", ok + "\n" + ok + "\n{\"stream\":\n", 0, "o.jsonl: line 3: unexpected end of JSON input"},
		{"no timestamp", "o.jsonl", ok + "\n" + `{"stream":"S","subject":"s","sequence":2,"payload":null}` + "\n", 0, "o.jsonl: line 2: no timestamp"},
		{"bad timestamp", "o.jsonl", `{"stream":"S","subject":"s","sequence":2,"timestamp":"yesterday","payload":null}`, 0, `o.jsonl: line 1: timestamp: parsing time "yesterday"`},
		{"no payload", "o.jsonl", "\n" + line(1, ""), 0, "o.jsonl: line 2: no payload"},
		{"negative sequence", "o.jsonl", line(-1, `,"payload":1`), 0, "o.jsonl: line 1: json: cannot unmarshal number -1 into Go struct field envelope.sequence of type uint64"},
		{"unknown encoding", "o.jsonl", line(1, `,"payload":"AA==","payload_encoding":"hex"`), 0, `o.jsonl: line 1: unknown payload_encoding "hex"`},
		{"bad base64", "o.jsonl", ok + "\n" + line(2, `,"payload":"A","payload_encoding":"base64"`), 0, "o.jsonl: line 2: payload: illegal base64 data at input byte 0"},
		{"base64 not a string", "o.jsonl", line(1, `,"payload":1,"payload_encoding":"base64"`), 0, "o.jsonl: line 1: payload_encoding is base64, but the payload is not a string"},
		{"original not a string", "o.jsonl", line(1, `,"payload":1,"payload_original":1`), 0, "o.jsonl: line 1: payload_original is not a string"},
		{"original null", "o.jsonl", line(1, `,"payload":null,"payload_original":null`), 0, "o.jsonl: line 1: payload_original is not a string"},
		{"bad original base64", "o.json", "[" + ok + "," + line(2, `,"payload":1,"payload_original":"I"`) + "]", 0, "o.json: element 2: payload_original: illegal base64 data at input byte 0"},
		{"original beside base64", "o.jsonl", line(1, `,"payload":"AA==","payload_encoding":"base64","payload_original":"AA=="`), 0, "o.jsonl: line 1: payload_original beside payload_encoding"},
		// {"a": 2 } under a payload edited to {"a":1}: the original must not come back.
		{"original of another payload", "o.jsonl", line(1, `,"payload":{"a":1},"payload_original":"eyJhIjogMiB9"`), 0, "o.jsonl: line 1: payload_original does not hold the payload"},
		{"original that is not JSON", "o.jsonl", line(1, `,"payload":1,"payload_original":"AA=="`), 0, "o.jsonl: line 1: payload_original does not hold the payload"},
		{"empty original", "o.jsonl", line(1, `,"payload":1,"payload_original":""`), 0, "o.jsonl: line 1: payload_original does not hold the payload"},
		{"line too long", "o.jsonl", ok + "\n" + long + "\n", 1000, "o.jsonl: line 2 is longer than 1000 bytes"},
		{"line too long, compressed", "o.jsonl.gz", gz(ok + "\n" + long + "\n"), 1000, "o.jsonl.gz: line 2 is longer than 1000 bytes"},
		{"element too long", "o.json", "[" + ok + "," + long + "]", 1000, "o.json: element 2 is longer than 1000 bytes"},
		{"bad element", "o.json", "[" + ok + "," + ok + ",{]", 0, "o.json: element 3: invalid character ']'"},
		{"not an array", "o.json", ok, 0, "o.json: not a JSON array"},
		{"after the array", "o.json", "[" + ok + "] [", 0, "o.json: [ after the array"},
		{"unclosed array", "o.json", "[" + ok, 0, "o.json: unexpected EOF"},
		{"not gzip", "o.jsonl.gz", ok, 0, "o.jsonl.gz: gzip: invalid header"},
		{"truncated gzip", "o.json.gz", gz("[" + ok + "," + ok + "]")[:40], 0, "o.json.gz: "},
		{"not zstd", "o.jsonl.zst", ok, 0, "o.jsonl.zst: line 1: invalid input: magic number mismatch"},
		{"not parquet", "o.parquet", ok, 0, "o.parquet: not a parquet file"},
		{"a huge parquet footer", "o.parquet", "PAR1\xff\xff\xff\x7fPAR1", 0, "o.parquet: not a parquet file: a footer of 2147483647 bytes in 12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxRecord := tt.maxRecord
			if maxRecord == 0 {
				maxRecord = maxRecordSize
			}
			err := readRecords(tt.key, strings.NewReader(tt.body), int64(len(tt.body)), func(*Record) error { return nil }, maxRecord)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want one starting with %q", err, tt.want)
			}
		})
	}
	t.Run("the reader fails", func(t *testing.T) {
		for _, key := range []string{"o.jsonl", "o.json.zst", "o.parquet"} {
			err := ReadRecords(key, errReaderAt{}, 100, func(*Record) error { return nil })
			if err == nil || !strings.HasPrefix(err.Error(), key+": ") || !strings.Contains(err.Error(), "connection reset") {
				t.Errorf("%s: %v, want connection reset naming the key", key, err)
			}
		}
	})
}

// Parquet files whose rows are not what the encoder writes: errors name
// the row, counted from 1 across row groups.
func TestReadRecordsParquetErrorsNameTheRow(t *testing.T) {
	type row struct {
		Stream    string    `parquet:"stream"`
		Subject   string    `parquet:"subject"`
		Sequence  int64     `parquet:"sequence"`
		Timestamp time.Time `parquet:"timestamp,timestamp(millisecond)"`
		Payload   *string   `parquet:"payload,optional"`
	}
	text := "text"
	var b bytes.Buffer
	w := parquet.NewGenericWriter[row](&b, parquet.MaxRowsPerRowGroup(2))
	rows := []row{
		{"S", "s", 1, time.UnixMilli(1_700_000_000_123), &text},
		{"S", "s", 2, time.UnixMilli(1_700_000_000_124), nil},
		{"S", "s", 3, time.UnixMilli(1_700_000_000_125), &text},
		{"S", "s", -4, time.UnixMilli(1_700_000_000_126), &text},
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(t, "o.parquet", b.Bytes())
	if err == nil || err.Error() != "o.parquet: row 4: sequence -4 is negative" {
		t.Fatalf("%v, want row 4's sequence named", err)
	}
	// A file of another writer, with millisecond timestamps and without
	// payload_base64 or headers, reads back up to that row.
	want := []Record{
		{Stream: "S", Subject: "s", Sequence: 1, Time: time.UnixMilli(1_700_000_000_123).UTC(), Data: []byte(text)},
		{Stream: "S", Subject: "s", Sequence: 2, Time: time.UnixMilli(1_700_000_000_124).UTC()},
		{Stream: "S", Subject: "s", Sequence: 3, Time: time.UnixMilli(1_700_000_000_125).UTC(), Data: []byte(text)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, want %+v", got, want)
	}
}

// FuzzReadRecords reads any bytes as an object of every extension: it must
// return, with records or an error, without panicking and without
// allocating more than a bound of its own.
func FuzzReadRecords(f *testing.F) {
	for _, name := range []string{"json_lines", "json_lines.gz", "json_lines.zst", "json_array", "json_array.gz", "json_array.zst", "json_lines_exact", "json_array_exact", "parquet_none", "parquet_snappy", "parquet_no_payload"} {
		body, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add(encodeBody(f, Options{Format: Parquet, Compression: Zstd, Headers: true, Columns: allTypes[:2]}, recordsToRestore()...))
	f.Add([]byte("[]"))
	f.Add([]byte("{\"stream\":\"S\",\"subject\":\"s\",\"sequence\":1,\"timestamp\":\"2026-11-29T07:00:00.123456789Z\",\"payload\":\"AA==\",\"payload_encoding\":\"base64\"}\n"))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe4, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00}) // a zstd frame header declaring 1 GiB
	keys := []string{"o.jsonl", "o.jsonl.gz", "o.jsonl.zst", "o.json", "o.json.gz", "o.json.zst", "o.bin", "o.parquet"}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, key := range keys {
			n := 0
			err := ReadRecords(key, bytes.NewReader(body), int64(len(body)), func(r *Record) error {
				n++
				if r.Data != nil && len(r.Data) == 0 {
					t.Fatalf("%s: empty data is not nil", key)
				}
				return nil
			})
			if err != nil && !strings.HasPrefix(err.Error(), key+": ") {
				t.Fatalf("%s: error %q does not name the key", key, err)
			}
		}
	})
}

// countingReaderAt counts the bytes read from it.
type countingReaderAt struct {
	r    io.ReaderAt
	read int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

// An object is read as a stream: stopping at its first record reads little
// of it.
func TestReadRecordsReadsAsAStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	written := manyRecords(100000, 1)
	for _, r := range written {
		r.Data = fmt.Appendf(nil, `{"random":"%x%x%x"}`, rng.Uint64(), rng.Uint64(), rng.Uint64())
	}
	stop := errors.New("stop")
	for _, opts := range []Options{
		{Format: JSONLines, Metadata: true},
		{Format: JSONArray, Compression: Gzip, Metadata: true},
		{Format: JSONLines, Compression: Zstd, Metadata: true},
		{Format: Parquet, RowGroupSize: 1 << 20},
	} {
		t.Run(restoreName(opts), func(t *testing.T) {
			body := encodeBody(t, opts, written...)
			r := &countingReaderAt{r: bytes.NewReader(body)}
			err := ReadRecords(objectKey(t, opts), r, int64(len(body)), func(*Record) error { return stop })
			if err != stop {
				t.Fatal(err)
			}
			if r.read > 3<<20 || r.read > int64(len(body))/4 {
				t.Errorf("read %d bytes of %d for the first record", r.read, len(body))
			}
			if testing.Verbose() {
				t.Logf("read %d bytes of %d for the first record", r.read, len(body))
			}
		})
	}
}
