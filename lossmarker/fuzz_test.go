package lossmarker_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jetlake/jetlake/lossmarker"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// encodes, parses back to the same marker and encodes to the same body.
func FuzzParse(f *testing.F) {
	for _, m := range goldenMarkers() {
		body, err := m.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	const valid = `{"stream":"S","consumer":"c","first_seq":1,"last_seq":2,"count":2,"reason":"gap","error":"","detected_at":"2026-11-29T07:00:00Z","exporter_version":""}`
	for _, body := range []string{
		valid,
		valid + "\n",
		valid + valid,
		strings.Replace(valid, `"S"`, `"\u00e9\ud800\u0000"`, 1),
		strings.Replace(valid, `"stream"`, `"STREAM"`, 1),
		strings.Replace(valid, `"count":2`, `"count":2,"count":1`, 1),
		strings.Replace(valid, `Z"`, `+14:00"`, 1),
		strings.Replace(valid, `"2026-11-29T07:00:00Z"`, `"0000-01-01T00:00:00+01:00"`, 1),
		strings.Replace(valid, `"2026-11-29T07:00:00Z"`, `"9999-12-31T23:59:59.999999999-23:59"`, 1),
		strings.Replace(valid, `"first_seq":1`, `"first_seq":18446744073709551615`, 1),
		`null`, `{}`, `[]`, ``, "\xff",
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := lossmarker.Parse(data)
		if err != nil {
			if m != nil {
				t.Errorf("Parse returned %+v with error %v", m, err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("Parse(%q) accepted an invalid marker: %v", data, err)
		}
		body, err := m.Encode()
		if err != nil {
			t.Fatalf("Parse(%q) accepted a marker that does not encode: %v", data, err)
		}
		again, err := lossmarker.Parse(body)
		if err != nil {
			t.Fatalf("Parse(Encode()) = %v for body %s", err, body)
		}
		checkSameMarker(t, again, m)
		body2, err := again.Encode()
		if err != nil || !bytes.Equal(body2, body) {
			t.Errorf("encoding again gives %s, %v; want %s", body2, err, body)
		}
		if k1, k2 := m.Key("raw"), again.Key("raw"); k1 != k2 || !strings.HasPrefix(k1, "raw/_jetlake/lost/") || strings.Contains(k1, "//") {
			t.Errorf("keys %q and %q", k1, k2)
		}
	})
}
