package formats_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jetlake/jetlake/formats"
)

func TestExtractor(t *testing.T) {
	cols := []formats.Column{
		{Name: "created_at", Source: "created_at", Type: formats.TypeTimestamp},
		{Name: "day", Source: "meta.day", Type: formats.TypeDate},
		{Name: "tenant", Source: "tenant", Type: formats.TypeString},
		{Name: "n", Source: "n", Type: formats.TypeInt64},
		{Name: "ok", Source: "ok", Type: formats.TypeBoolean},
		{Name: "x", Source: "x", Type: formats.TypeDouble},
		{Name: "at", Source: "at", Type: formats.TypeTimestamp, Unit: "ms"},
	}
	x, err := formats.NewExtractor(cols, formats.RejectTypeErrors)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := x.Extract([]byte(`{"created_at":"2026-12-01T10:30:00+02:00","meta":{"day":"2026-11-30"},"tenant":"a\/b","n":42,"ok":true,"x":1.5,"at":1700000000123}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-12-01T08:30:00Z", "2026-11-30", "a/b", "42", "true", "1.5", "2023-11-14T22:13:20.123Z"}
	for i, v := range vals {
		if got := string(v.AppendText(nil)); got != want[i] {
			t.Errorf("%s: %q, want %q", cols[i].Name, got, want[i])
		}
	}
	if ts, ok := vals[0].Time(); !ok || !ts.Equal(time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC)) {
		t.Errorf("created_at Time() = %v, %v", ts, ok)
	}
	if d, ok := vals[1].Time(); !ok || !d.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day Time() = %v, %v", d, ok)
	}
	if _, ok := vals[2].Time(); ok {
		t.Error("a string has a Time")
	}

	// Missing, null and not JSON are null values, and have no time.
	for _, payload := range []string{`{}`, `{"created_at":null}`, `not json`, ``} {
		vals, err := x.Extract([]byte(payload))
		if err != nil {
			t.Fatalf("%q: %v", payload, err)
		}
		for i, v := range vals {
			if !v.Null || len(v.AppendText(nil)) != 0 {
				t.Errorf("%q: %s is %+v, want null", payload, cols[i].Name, v)
			}
		}
		if _, ok := vals[0].Time(); ok {
			t.Errorf("%q: a null value has a time", payload)
		}
	}

	// A value of the wrong type is a TypeError, or null with the null policy.
	var te *formats.TypeError
	if _, err := x.Extract([]byte(`{"created_at":"yesterday"}`)); !errors.As(err, &te) || te.Column != "created_at" {
		t.Errorf("bad timestamp: %v", err)
	}
	nx, err := formats.NewExtractor(cols, formats.NullTypeErrors)
	if err != nil {
		t.Fatal(err)
	}
	if vals, err := nx.Extract([]byte(`{"created_at":"yesterday","tenant":"t"}`)); err != nil || !vals[0].Null || string(vals[2].Bytes) != "t" {
		t.Errorf("null policy: %+v, %v", vals, err)
	}
}

func TestTimeText(t *testing.T) {
	ms, err := formats.NewTimeText("ms")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tt   formats.TimeText
		in   string
		want time.Time
		ok   bool
	}{
		{formats.TimeText{}, "2026-12-01T10:30:00.5-01:00", time.Date(2026, 12, 1, 11, 30, 0, 5e8, time.UTC), true},
		{formats.TimeText{}, "1700000000", time.Time{}, false}, // no unit
		{ms, "1700000000123", time.Date(2023, 11, 14, 22, 13, 20, 123e6, time.UTC), true},
		{ms, "2026-01-02T03:04:05Z", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), true},
		{ms, "", time.Time{}, false},
		{ms, "soon", time.Time{}, false},
	}
	for _, tt := range tests {
		got, err := tt.tt.Parse(tt.in)
		if (err == nil) != tt.ok || tt.ok && !got.Equal(tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
	if _, err := formats.NewTimeText("days"); err == nil {
		t.Error("unit days accepted")
	}
}
