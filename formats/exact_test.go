package formats

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// The record of each payload with Options.ExactPayload: payload_original
// follows a compacted payload whose bytes it does not keep, and nothing
// else changes.
func TestExactPayloadRecords(t *testing.T) {
	exact := Options{Metadata: true, ExactPayload: true}
	exactHeaders := Options{Metadata: true, Headers: true, ExactPayload: true}
	const prefix = `{"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z",`
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name string
		opts Options
		r    *Record
		want string
	}{
		{"a compact payload carries nothing more", exact, rec(`{"id":1,"a":[1,2]}`),
			prefix + `"payload":{"id":1,"a":[1,2]}}`},
		{"a compact string", exact, rec(`"x y"`),
			prefix + `"payload":"x y"}`},
		{"whitespace between tokens", exact, rec(`{"id": 1}`),
			prefix + `"payload":{"id":1},"payload_original":"` + b64(`{"id": 1}`) + `"}`},
		{"a trailing newline", exact, rec("{\"id\":1}\n"),
			prefix + `"payload":{"id":1},"payload_original":"` + b64("{\"id\":1}\n") + `"}`},
		{"after the headers", exactHeaders,
			with(rec("[1, 2]"), func(r *Record) { r.Headers = map[string][]string{"K": {"v"}} }),
			prefix + `"headers":{"K":["v"]},"payload":[1,2],"payload_original":"` + b64("[1, 2]") + `"}`},
		{"the literal null, which reads back as empty without it", exact, rec(`null`),
			prefix + `"payload":null,"payload_original":"` + b64("null") + `"}`},
		{"null with whitespace", exact, rec(` null `),
			prefix + `"payload":null,"payload_original":"` + b64(" null ") + `"}`},
		{"an empty payload is null", exact, rec(``),
			prefix + `"payload":null}`},
		{"text that is not JSON is base64 already", exact, rec("plain text\n"),
			prefix + `"payload":"` + b64("plain text\n") + `","payload_encoding":"base64"}`},
		{"binary is base64 already", exact, rec("\xff\x00"),
			prefix + `"payload":"` + b64("\xff\x00") + `","payload_encoding":"base64"}`},
		{"without the option", Options{Metadata: true}, rec(`{"id": 1}`),
			prefix + `"payload":{"id":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendJSONRecord(nil, tt.r, tt.opts))
			if got != tt.want {
				t.Errorf("record:\n got %s\nwant %s", got, tt.want)
			}
			if n := jsonBound(tt.r, &tt.opts); n < len(got) {
				t.Errorf("jsonBound = %d, the record has %d bytes", n, len(got))
			}
		})
	}
}

// Payloads with whitespace come back byte for byte with ExactPayload and
// compacted without it, in every JSON encoding.
func TestExactPayloadsComeBackByteForByte(t *testing.T) {
	payloads := []string{
		"{\n  \"id\": 1,\n  \"tags\": [ \"a\", \"b\" ]\n}\n",
		"\t[1, 2.50, 1e400, 123456789012345678901234567890]\r\n",
		` "caf\u00e9 \"q\"" `,
		`null`,
		` true `,
		`{"already":"compact"}`,
		"not JSON\n",
		"\xff\xfe",
	}
	var written []*Record
	for i, p := range payloads {
		written = append(written, &Record{Stream: "S", Subject: "s", Sequence: uint64(i + 1), Time: t0, Data: []byte(p)})
	}
	for _, f := range []Format{JSONLines, JSONArray} {
		for _, c := range []Compression{None, Gzip, Zstd} {
			for _, exact := range []bool{false, true} {
				opts := Options{Format: f, Compression: c, Metadata: true, ExactPayload: exact}
				t.Run(encodingName(opts), func(t *testing.T) {
					got, err := readAll(t, objectKey(t, opts), encodeBody(t, opts, written...))
					if err != nil {
						t.Fatal(err)
					}
					for i, p := range payloads {
						want := p
						if !exact {
							want = string(wantData([]byte(p), f))
						}
						if string(got[i].Data) != want {
							t.Errorf("payload %q comes back as %q, want %q", p, got[i].Data, want)
						}
					}
				})
			}
		}
	}
}

// Exact payloads of compact JSON cost nothing: the object is the one
// written without the option.
func TestExactPayloadsOfCompactJSONLeaveTheObjectAlone(t *testing.T) {
	records := benchRecords(500)
	for _, r := range records {
		var ok bool
		if r.Data, ok = appendCompactJSON(nil, r.Data); !ok {
			t.Fatalf("%s is not JSON", r.Data)
		}
	}
	for _, f := range []Format{JSONLines, JSONArray} {
		plain := encodeBody(t, Options{Format: f, Metadata: true, Headers: true}, records...)
		exact := encodeBody(t, Options{Format: f, Metadata: true, Headers: true, ExactPayload: true}, records...)
		if !bytes.Equal(plain, exact) {
			t.Errorf("%s: records of compact payloads differ with ExactPayload", f)
		}
	}
}

// jsonBound stays an upper bound with ExactPayload, for payloads of every
// kind and size.
func TestJSONBoundHoldsExactPayloads(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	records := append(recordsToRestore(), randomRecords(rng, 500)...)
	for _, n := range []int{0, 1, 2, 3, 100} {
		records = append(records, rec(strings.Repeat(" ", n)+"1"+strings.Repeat("\n", n)))
		records = append(records, rec(strings.Repeat("[", n)+strings.Repeat(" ]", n)))
	}
	for _, opts := range []Options{
		{Metadata: true, ExactPayload: true},
		{Metadata: true, Headers: true, ExactPayload: true},
	} {
		for _, r := range records {
			if n, got := jsonBound(r, &opts), len(AppendJSONRecord(nil, r, opts)); n < got {
				t.Fatalf("jsonBound = %d for a record of %d bytes: %q", n, got, r.Data)
			}
		}
	}
}
