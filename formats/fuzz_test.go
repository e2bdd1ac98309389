package formats

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzRecord checks that json_lines and json_array bodies are valid JSON
// and decode back to the records they were made from, and that ReadRecords
// reads back what they hold: with Options.ExactPayload, the data itself.
func FuzzRecord(f *testing.F) {
	f.Add("EVENTS", "events.a", uint64(42), int64(1795849200123456789), "K", "v", []byte(`{"a": [1, 2]}`), uint8(3))
	f.Add("", "", uint64(0), int64(0), "", "", []byte(nil), uint8(0))
	f.Add("S\"\\", "a.\x00.\xff.\u2028", uint64(1<<63), int64(-1), "\xfe", "\n\t", []byte("\xff"), uint8(1))
	f.Add("é", "日本", uint64(7), int64(1), "b", "a", []byte(` 123456789012345678901234567890 `), uint8(3))
	f.Add("EVENTS", "events.a", uint64(42), int64(1795849200123456789), "K", "v", []byte("{\"a\": [1, 2]}\n"), uint8(7))
	f.Add("EVENTS", "events.a", uint64(1), int64(1), "K", "v", []byte("null"), uint8(5))
	f.Add("EVENTS", "events.a", uint64(1), int64(1), "K", "v", []byte(`{"a":[1,2]}`), uint8(5))
	f.Fuzz(func(t *testing.T, stream, subject string, seq uint64, nanos int64, key, value string, data []byte, flags uint8) {
		r := &Record{
			Stream:   stream,
			Subject:  subject,
			Sequence: seq,
			Time:     time.Unix(0, nanos).In(time.FixedZone("", int(nanos%50000))),
			Headers:  map[string][]string{key: {value, key}},
			Data:     data,
		}
		other := &Record{Stream: "S", Subject: "s", Sequence: 1, Time: time.Unix(0, 0), Data: []byte("[1]")}
		records := []*Record{r, other, r}
		for _, format := range []Format{JSONLines, JSONArray} {
			opts := Options{Format: format, Metadata: flags&1 != 0, Headers: flags&2 != 0}
			opts.ExactPayload = opts.Metadata && flags&4 != 0
			body := encode(t, opts, records...)
			checkRoundTrip(t, opts, records, body)
			if opts.Metadata {
				got, err := readAll(t, objectKey(t, opts), body)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range records {
					if w := wantRecord(r, opts); !bytes.Equal(got[i].Data, w.Data) || (got[i].Data == nil) != (w.Data == nil) {
						t.Fatalf("%s: record %d: ReadRecords gives data %q, want %q", encodingName(opts), i, got[i].Data, w.Data)
					}
				}
			}
		}
	})
}

// checkRoundTrip checks that body is a valid json_lines or json_array body
// holding records as opts describe.
func checkRoundTrip(t *testing.T, opts Options, records []*Record, body []byte) {
	t.Helper()
	var elems []json.RawMessage
	switch opts.Format {
	case JSONArray:
		if !json.Valid(body) {
			t.Fatalf("json_array body is not valid JSON: %q", body)
		}
		if err := json.Unmarshal(body, &elems); err != nil {
			t.Fatalf("json_array body: %v", err)
		}
	default:
		if len(body) > 0 && body[len(body)-1] != '\n' {
			t.Fatalf("json_lines body does not end with a newline: %q", body)
		}
		for line := range bytes.Lines(body) {
			line = bytes.TrimSuffix(line, []byte("\n"))
			if !json.Valid(line) {
				t.Fatalf("json_lines line is not valid JSON: %q", line)
			}
			elems = append(elems, line)
		}
	}
	if len(elems) != len(records) {
		t.Fatalf("body holds %d records, want %d: %q", len(elems), len(records), body)
	}
	for i, r := range records {
		checkRecord(t, opts, r, elems[i])
	}
}

// checkRecord checks that elem is the JSON form of r.
func checkRecord(t *testing.T, opts Options, r *Record, elem []byte) {
	t.Helper()
	payload, base64Payload := expectedPayload(r.Data)
	if !opts.Metadata {
		want := payload
		if base64Payload {
			want = `{"payload":` + payload + `,"payload_encoding":"base64"}`
		}
		if string(elem) != want {
			t.Fatalf("record = %s, want %s", elem, want)
		}
		return
	}
	var got struct {
		Stream          string
		Subject         string
		Sequence        uint64
		Timestamp       string
		Headers         map[string][]string
		Payload         json.RawMessage
		PayloadEncoding *string `json:"payload_encoding"`
		PayloadOriginal *string `json:"payload_original"`
	}
	if err := json.Unmarshal(elem, &got); err != nil {
		t.Fatalf("record %s: %v", elem, err)
	}
	if want := validString(r.Stream); got.Stream != want {
		t.Errorf("stream = %q, want %q", got.Stream, want)
	}
	if want := validString(r.Subject); got.Subject != want {
		t.Errorf("subject = %q, want %q", got.Subject, want)
	}
	if got.Sequence != r.Sequence {
		t.Errorf("sequence = %d, want %d", got.Sequence, r.Sequence)
	}
	ts, err := time.Parse(time.RFC3339Nano, got.Timestamp)
	if err != nil || !ts.Equal(r.Time) || len(got.Timestamp) != len(timestampLayout) {
		t.Errorf("timestamp = %q (%v), want %v with nine fractional digits in UTC", got.Timestamp, err, r.Time)
	}
	if opts.Headers && len(r.Headers) > 0 {
		if len(got.Headers) != len(r.Headers) {
			t.Errorf("headers = %q, want %q", got.Headers, r.Headers)
		}
		for k, vs := range r.Headers {
			var want []string
			for _, v := range vs {
				want = append(want, validString(v))
			}
			if !slices.Equal(got.Headers[validString(k)], want) {
				t.Errorf("headers = %q, want %q", got.Headers, r.Headers)
			}
		}
	} else if got.Headers != nil {
		t.Errorf("headers = %q, want none", got.Headers)
	}
	if string(got.Payload) != payload {
		t.Errorf("payload = %s, want %s", got.Payload, payload)
	}
	if base64Payload != (got.PayloadEncoding != nil) || base64Payload && *got.PayloadEncoding != "base64" {
		t.Errorf("record %s: payload_encoding wrong for base64 = %v", elem, base64Payload)
	}
	// With ExactPayload, a JSON payload whose compacted value is not its
	// bytes, or is null, carries them in payload_original; no other does.
	wantOriginal := opts.ExactPayload && !base64Payload && len(r.Data) > 0 && (payload != string(r.Data) || payload == "null")
	switch {
	case wantOriginal != (got.PayloadOriginal != nil):
		t.Errorf("record %s: payload_original present = %v, want %v", elem, got.PayloadOriginal != nil, wantOriginal)
	case wantOriginal && *got.PayloadOriginal != base64.StdEncoding.EncodeToString(r.Data):
		t.Errorf("record %s: payload_original is not the base64 of %q", elem, r.Data)
	}
}

// expectedPayload returns the JSON a payload must be written as, computed
// with encoding/json, and whether that is base64.
func expectedPayload(data []byte) (string, bool) {
	if len(data) == 0 {
		return "null", false
	}
	var b bytes.Buffer
	if utf8.Valid(data) && json.Compact(&b, data) == nil {
		return b.String(), false
	}
	return `"` + base64.StdEncoding.EncodeToString(data) + `"`, true
}

// validString returns s with every byte that is not valid UTF-8 replaced by
// U+FFFD, as a JSON string carries it.
func validString(s string) string {
	return string([]rune(s))
}
