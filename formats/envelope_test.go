package formats

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// envelopeSeeds are records scanEnvelope reads, and records it leaves to
// encoding/json: escapes, other spellings, duplicates, nulls, bad JSON.
var envelopeSeeds = []string{
	`{"stream":"S","subject":"s.a","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z","headers":{"K":["v","w"],"E":[]},"payload":{"a": [1, 2.5e-3, "x\"y", true, null]}}`,
	`{"stream":"S","subject":"s","sequence":1,"timestamp":"t","payload":"AAE=","payload_encoding":"base64"}`,
	`{"stream":"S","subject":"s","sequence":1,"timestamp":"t","payload":{"a":1},"payload_original":"eyJhIjogMX0="}`,
	` { "stream" : "S" , "sequence" : 0 , "payload" : null , "headers" : null } `,
	`{}`,
	`{"stream":"S\u0041"}`,
	`{"Stream":"S"}`,
	`{"stream":"S","stream":"T"}`,
	`{"stream":null}`,
	`{"sequence":-1}`,
	`{"sequence":1.0}`,
	`{"sequence":18446744073709551616}`,
	`{"sequence":01}`,
	`{"payload":[1,}`,
	`{"payload":"a` + "\x01" + `"}`,
	`{"payload":1}x`,
	`{"payload":tru}`,
	`{"headers":{"K":"v"}}`,
	`{"headers":{"K":[1]}}`,
	`{"headers":{"K":["a"],"K":["b"]}}`,
	`{"subject":"` + "\xff" + `"}`,
	`{"other":1}`,
	`[1]`,
	`{"payload":` + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + `}`,
}

// FuzzScanEnvelope holds scanEnvelope to encoding/json: a record it reads
// is one encoding/json reads, into the same envelope.
func FuzzScanEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast envelope
		var strs envelopeStrings
		if !scanEnvelope(b, &fast, &strs) {
			return
		}
		var slow envelope
		if err := json.Unmarshal(b, &slow); err != nil {
			t.Fatalf("scanEnvelope read %q, which encoding/json refuses: %v", b, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: scanEnvelope read %s, encoding/json %s", b, show(fast), show(slow))
		}
	})
}

// The seeds the fast path must read, and those it must leave to
// encoding/json.
func TestScanEnvelopeReadsWhatTheEncoderWrites(t *testing.T) {
	for i, s := range envelopeSeeds {
		var env envelope
		got := scanEnvelope([]byte(s), &env, &envelopeStrings{})
		if want := i < 5; got != want {
			t.Errorf("%q: read %v, want %v", s, got, want)
		}
	}
}

func show(e envelope) string {
	b, _ := json.Marshal(e)
	return string(b)
}
