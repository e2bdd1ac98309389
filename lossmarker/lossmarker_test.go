package lossmarker_test

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/lossmarker"
)

// validMarker returns a marker that passes Validate, for tests to break.
func validMarker() *lossmarker.Marker {
	return &lossmarker.Marker{
		Stream:          "ORDERS",
		Consumer:        "jetlake-orders",
		FirstSeq:        1001,
		LastSeq:         1500,
		Count:           500,
		Reason:          lossmarker.Gap,
		Error:           "stream removed sequences 1001-1500 before they were read",
		DetectedAt:      time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC),
		ExporterVersion: "v0.3.0",
	}
}

func TestKey(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	est := time.FixedZone("EST", -5*3600)
	tests := []struct {
		name   string
		prefix string
		change func(m *lossmarker.Marker)
		want   string
	}{
		{"a marker lives under the prefix", "raw", nil,
			"raw/_jetlake/lost/ORDERS/2026-11-29/00000000000000001001-00000000000000001500.lost.json"},
		{"a prefix with several segments", "data/raw", nil,
			"data/raw/_jetlake/lost/ORDERS/2026-11-29/00000000000000001001-00000000000000001500.lost.json"},
		{"an empty prefix leaves no leading slash", "", nil,
			"_jetlake/lost/ORDERS/2026-11-29/00000000000000001001-00000000000000001500.lost.json"},
		{"the date is UTC, a day before a zone east of it", "raw",
			func(m *lossmarker.Marker) { m.DetectedAt = time.Date(2026, 1, 1, 0, 30, 0, 0, cet) },
			"raw/_jetlake/lost/ORDERS/2025-12-31/00000000000000001001-00000000000000001500.lost.json"},
		{"the date is UTC, a day after a zone west of it", "raw",
			func(m *lossmarker.Marker) { m.DetectedAt = time.Date(2025, 12, 31, 20, 0, 0, 0, est) },
			"raw/_jetlake/lost/ORDERS/2026-01-01/00000000000000001001-00000000000000001500.lost.json"},
		{"midnight UTC starts the new day", "raw",
			func(m *lossmarker.Marker) { m.DetectedAt = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC) },
			"raw/_jetlake/lost/ORDERS/2026-03-01/00000000000000001001-00000000000000001500.lost.json"},
		{"the last nanosecond of a day", "raw",
			func(m *lossmarker.Marker) { m.DetectedAt = time.Date(2026, 2, 28, 23, 59, 59, 999999999, time.UTC) },
			"raw/_jetlake/lost/ORDERS/2026-02-28/00000000000000001001-00000000000000001500.lost.json"},
		{"the stream is escaped", "raw",
			func(m *lossmarker.Marker) { m.Stream = "a/b c" },
			"raw/_jetlake/lost/a%2Fb%20c/2026-11-29/00000000000000001001-00000000000000001500.lost.json"},
		{"a stream of '..' is no relative segment", "raw",
			func(m *lossmarker.Marker) { m.Stream = ".." },
			"raw/_jetlake/lost/%2E%2E/2026-11-29/00000000000000001001-00000000000000001500.lost.json"},
		{"one sequence", "raw",
			func(m *lossmarker.Marker) { m.FirstSeq, m.LastSeq, m.Count = 7, 7, 1 },
			"raw/_jetlake/lost/ORDERS/2026-11-29/00000000000000000007-00000000000000000007.lost.json"},
		{"the largest sequence", "raw",
			func(m *lossmarker.Marker) { m.FirstSeq, m.LastSeq = 1, math.MaxUint64 },
			"raw/_jetlake/lost/ORDERS/2026-11-29/00000000000000000001-18446744073709551615.lost.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validMarker()
			if tt.change != nil {
				tt.change(m)
			}
			if got := m.Key(tt.prefix); got != tt.want {
				t.Errorf("Key(%q) = %q\nwant %q", tt.prefix, got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(m *lossmarker.Marker)
		want   string // "" for a valid marker
	}{
		{"a complete marker", nil, ""},
		{"a poison marker", func(m *lossmarker.Marker) { m.Reason = lossmarker.Poison }, ""},
		{"a sparse gap counts fewer sequences than its range", func(m *lossmarker.Marker) { m.Count = 3 }, ""},
		{"one sequence", func(m *lossmarker.Marker) { m.FirstSeq, m.LastSeq, m.Count = 9, 9, 1 }, ""},
		{"the whole sequence space", func(m *lossmarker.Marker) { m.FirstSeq, m.LastSeq, m.Count = 1, math.MaxUint64, math.MaxUint64 }, ""},
		{"consumer, subject, error and version are optional", func(m *lossmarker.Marker) {
			m.Consumer, m.Subject, m.Error, m.ExporterVersion = "", "", "", ""
		}, ""},
		{"detected in year 0", func(m *lossmarker.Marker) { m.DetectedAt = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC) }, ""},
		{"detected in year 9999", func(m *lossmarker.Marker) { m.DetectedAt = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC) }, ""},

		{"exact ranges", func(m *lossmarker.Marker) {
			m.Ranges, m.Count = []lossmarker.Range{{First: 1001, Last: 1001}, {First: 1003, Last: 1400}, {First: 1500, Last: 1500}}, 400
		}, ""},
		{"one exact range", func(m *lossmarker.Marker) { m.Ranges = []lossmarker.Range{{First: 1001, Last: 1500}} }, ""},
		{"ranges up to the last sequence", func(m *lossmarker.Marker) {
			m.FirstSeq, m.LastSeq, m.Count = 1, math.MaxUint64, math.MaxUint64-1
			m.Ranges = []lossmarker.Range{{First: 1, Last: 1}, {First: 3, Last: math.MaxUint64}}
		}, ""},

		{"ranges that touch", func(m *lossmarker.Marker) {
			m.Ranges, m.Count = []lossmarker.Range{{First: 1001, Last: 1200}, {First: 1201, Last: 1500}}, 500
		}, "lossmarker: ranges[1] 1201-1500 does not follow 1001-1200 with a gap"},
		{"ranges out of order", func(m *lossmarker.Marker) {
			m.Ranges, m.Count = []lossmarker.Range{{First: 1400, Last: 1500}, {First: 1001, Last: 1100}}, 201
		}, "lossmarker: ranges[1] 1001-1100 does not follow 1400-1500 with a gap"},
		{"a range after the last sequence", func(m *lossmarker.Marker) {
			m.FirstSeq, m.LastSeq = 1, math.MaxUint64
			m.Ranges, m.Count = []lossmarker.Range{{First: 1, Last: math.MaxUint64}, {First: 5, Last: 5}}, 1
		}, "lossmarker: ranges[1] 5-5 does not follow 1-18446744073709551615 with a gap"},
		{"a reversed range", func(m *lossmarker.Marker) { m.Ranges = []lossmarker.Range{{First: 1500, Last: 1001}} },
			"lossmarker: ranges[0] 1500-1001 is not a range of stream sequences"},
		{"ranges that do not span the marker", func(m *lossmarker.Marker) {
			m.Ranges, m.Count = []lossmarker.Range{{First: 1001, Last: 1400}}, 400
		}, "lossmarker: ranges span 1001-1400, not 1001-1500"},
		{"ranges that do not hold count", func(m *lossmarker.Marker) {
			m.Ranges = []lossmarker.Range{{First: 1001, Last: 1001}, {First: 1500, Last: 1500}}
		}, "lossmarker: ranges hold 2 sequences, not count 500"},
		{"no stream", func(m *lossmarker.Marker) { m.Stream = "" },
			"lossmarker: stream is empty"},
		{"first sequence 0", func(m *lossmarker.Marker) { m.FirstSeq = 0 },
			"lossmarker: range 0-1500 is not a range of stream sequences"},
		{"last before first", func(m *lossmarker.Marker) { m.FirstSeq, m.LastSeq, m.Count = 10, 9, 1 },
			"lossmarker: range 10-9 is not a range of stream sequences\ncount 1 does not fit range 10-9"},
		{"last far before first", func(m *lossmarker.Marker) { m.FirstSeq, m.LastSeq, m.Count = 10, 5, 1 },
			"lossmarker: range 10-5 is not a range of stream sequences"},
		{"count 0", func(m *lossmarker.Marker) { m.Count = 0 },
			"lossmarker: count 0 does not fit range 1001-1500"},
		{"count above the range", func(m *lossmarker.Marker) { m.Count = 501 },
			"lossmarker: count 501 does not fit range 1001-1500"},
		{"no reason", func(m *lossmarker.Marker) { m.Reason = "" },
			`lossmarker: reason "" is neither "gap" nor "poison"`},
		{"an unknown reason", func(m *lossmarker.Marker) { m.Reason = "Gap" },
			`lossmarker: reason "Gap" is neither "gap" nor "poison"`},
		{"no detection time", func(m *lossmarker.Marker) { m.DetectedAt = time.Time{} },
			"lossmarker: detected_at is not set"},
		{"a detection time JSON can not hold", func(m *lossmarker.Marker) {
			m.DetectedAt = time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("", -3600))
		}, "lossmarker: detected_at year 10000 is outside 0-9999"},
		{"a detection time before year 0", func(m *lossmarker.Marker) { m.DetectedAt = time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC) },
			"lossmarker: detected_at year -1 is outside 0-9999"},
		{"every problem is reported", func(m *lossmarker.Marker) { *m = lossmarker.Marker{} },
			"lossmarker: stream is empty\n" +
				"range 0-0 is not a range of stream sequences\n" +
				"count 0 does not fit range 0-0\n" +
				`reason "" is neither "gap" nor "poison"` + "\n" +
				"detected_at is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validMarker()
			if tt.change != nil {
				tt.change(m)
			}
			err := m.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("Validate() = %v\nwant %s", err, tt.want)
			}
			body, encErr := m.Encode()
			switch {
			case tt.want == "" && encErr != nil:
				t.Errorf("Encode() = %v for a valid marker", encErr)
			case tt.want != "" && (encErr == nil || encErr.Error() != tt.want || body != nil):
				t.Errorf("Encode() = %q, %v; want the Validate error", body, encErr)
			}
		})
	}
}

func TestEncodeWritesUTCAndLeavesTheMarkerAlone(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	m := validMarker()
	m.DetectedAt = time.Date(2026, 1, 1, 0, 30, 0, 5, cet)
	body, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"detected_at": "2025-12-31T23:30:00.000000005Z"`) {
		t.Errorf("Encode() = %s, want detected_at in UTC", body)
	}
	if m.DetectedAt.Location() != cet {
		t.Errorf("Encode changed the marker's time zone to %v", m.DetectedAt.Location())
	}
}

func TestParseRoundTrip(t *testing.T) {
	for name, m := range goldenMarkers() {
		t.Run(name, func(t *testing.T) {
			body, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := lossmarker.Parse(body)
			if err != nil {
				t.Fatalf("Parse(Encode()) = %v", err)
			}
			checkSameMarker(t, got, m)
			if got.DetectedAt.Location() != time.UTC {
				t.Errorf("parsed detected_at is in %v, want UTC", got.DetectedAt.Location())
			}
		})
	}
}

// checkSameMarker checks that got and want hold the same fields and the same
// instant, in whatever zone.
func checkSameMarker(t *testing.T, got, want *lossmarker.Marker) {
	t.Helper()
	if !got.DetectedAt.Equal(want.DetectedAt) {
		t.Errorf("detected_at = %v, want %v", got.DetectedAt, want.DetectedAt)
	}
	g, w := *got, *want
	g.DetectedAt, w.DetectedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("marker = %+v\nwant %+v", g, w)
	}
}

func TestParseRejects(t *testing.T) {
	const valid = `{"stream": "ORDERS", "consumer": "c", "first_seq": 1, "last_seq": 2, "count": 2, ` +
		`"reason": "gap", "error": "", "detected_at": "2026-11-29T07:00:00Z", "exporter_version": "v1"}`
	if _, err := lossmarker.Parse([]byte(valid)); err != nil {
		t.Fatalf("Parse(%s) = %v, the cases below build on it", valid, err)
	}
	tests := []struct {
		name, body, want string
	}{
		{"an empty body", ``, "lossmarker: EOF"},
		{"null", `null`, "lossmarker: stream is empty\n" +
			"range 0-0 is not a range of stream sequences\n" +
			"count 0 does not fit range 0-0\n" +
			`reason "" is neither "gap" nor "poison"` + "\n" +
			"detected_at is not set"},
		{"an unknown field", strings.Replace(valid, `"count"`, `"lost": 1, "count"`, 1),
			`lossmarker: json: unknown field "lost"`},
		{"a second object", valid + valid, "lossmarker: data after the marker object"},
		{"trailing text", valid + "x", "lossmarker: data after the marker object"},
		{"an unclosed object", valid[:len(valid)-1], "lossmarker: unexpected EOF"},
		{"an invalid marker", strings.Replace(valid, `"count": 2`, `"count": 3`, 1),
			"lossmarker: count 3 does not fit range 1-2"},
		{"an unknown reason", strings.Replace(valid, `"gap"`, `"expired"`, 1),
			`lossmarker: reason "expired" is neither "gap" nor "poison"`},
		{"no detection time", strings.Replace(valid, `"2026-11-29T07:00:00Z"`, `"0001-01-01T00:00:00Z"`, 1),
			"lossmarker: detected_at is not set"},
		{"a detection time beyond year 9999 in UTC", strings.Replace(valid, `"2026-11-29T07:00:00Z"`, `"9999-12-31T23:00:00-01:00"`, 1),
			"lossmarker: detected_at year 10000 is outside 0-9999"},
		{"a detection time before year 0 in UTC", strings.Replace(valid, `"2026-11-29T07:00:00Z"`, `"0000-01-01T00:00:00+01:00"`, 1),
			"lossmarker: detected_at year -1 is outside 0-9999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := lossmarker.Parse([]byte(tt.body))
			if err == nil || err.Error() != tt.want || m != nil {
				t.Errorf("Parse(%s) = %+v, %v\nwant error %s", tt.body, m, err, tt.want)
			}
		})
	}
	// The wording of encoding/json's own errors is not ours; only check
	// that they are rejected, with the package prefix.
	for _, body := range []string{
		`[]`, `"marker"`, `{`,
		strings.Replace(valid, `"first_seq": 1`, `"first_seq": "1"`, 1),
		strings.Replace(valid, `"first_seq": 1`, `"first_seq": -1`, 1),
		strings.Replace(valid, `"first_seq": 1`, `"first_seq": 1.5`, 1),
		strings.Replace(valid, `"first_seq": 1`, `"first_seq": 18446744073709551616`, 1),
		strings.Replace(valid, `"2026-11-29T07:00:00Z"`, `"2026-11-29 07:00:00"`, 1),
		strings.Replace(valid, `"2026-11-29T07:00:00Z"`, `1795849200`, 1),
		strings.Replace(valid, `"stream": "ORDERS"`, `"stream": 1`, 1),
	} {
		m, err := lossmarker.Parse([]byte(body))
		if err == nil || !strings.HasPrefix(err.Error(), "lossmarker: ") {
			t.Errorf("Parse(%s) = %+v, %v; want a lossmarker error", body, m, err)
		}
	}
}
