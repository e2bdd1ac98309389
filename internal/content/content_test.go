package content

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

func contentOutput(t *testing.T, et config.EventTime) *config.Output {
	t.Helper()
	return &config.Output{
		PathTemplate: pathtemplate.MustParse("{stream}/dt={date}/{hour}/tenant={column:tenant}/r={header:Region}"),
		Columns: []config.Column{
			{Name: "created_at", Source: "created_at", Type: formats.TypeTimestamp},
			{Name: "tenant", Source: "tenant", Type: formats.TypeString},
		},
		OnTypeError: formats.RejectTypeErrors,
		Time:        et,
	}
}

func TestContentRendersEventTimeColumnsAndHeaders(t *testing.T) {
	ingest := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	ms := config.EventTime{Header: "Event-Time", Unit: "ms"}
	tests := []struct {
		name     string
		et       config.EventTime
		data     string
		headers  map[string][]string
		want     string
		fellBack bool
		reject   string // the rejection's kind, or ""
	}{
		{"ingest", config.EventTime{}, `{"created_at":"2026-11-01T10:00:00Z","tenant":"a"}`, nil,
			"S/dt=2026-12-03/15/tenant=a/r=" + pathtemplate.MissingValue, false, ""},
		{"column", config.EventTime{Column: "created_at"}, `{"created_at":"2026-11-01T10:00:00Z","tenant":"a b"}`, map[string][]string{"Region": {"eu"}},
			"S/dt=2026-11-01/10/tenant=a%20b/r=eu", false, ""},
		{"column in a time zone", config.EventTime{Column: "created_at", Location: berlin}, `{"created_at":"2026-11-01T23:30:00Z","tenant":"a"}`, nil,
			"S/dt=2026-11-02/00/tenant=a/r=" + pathtemplate.MissingValue, false, ""},
		{"missing column falls back", config.EventTime{Column: "created_at"}, `{"tenant":"a"}`, nil,
			"S/dt=2026-12-03/15/tenant=a/r=" + pathtemplate.MissingValue, true, ""},
		{"not JSON falls back", config.EventTime{Column: "created_at"}, `hello`, nil,
			"S/dt=2026-12-03/15/tenant=" + pathtemplate.MissingValue + "/r=" + pathtemplate.MissingValue, true, ""},
		{"missing column rejected", config.EventTime{Column: "created_at", Reject: true}, `{"tenant":"a"}`, nil, "", false, "event_time"},
		{"wrong type rejected", config.EventTime{Column: "created_at"}, `{"created_at":"yesterday"}`, nil, "", false, "type"},
		{"header epoch ms", ms, `{}`, map[string][]string{"Event-Time": {"1700000000123"}},
			"S/dt=2023-11-14/22/tenant=" + pathtemplate.MissingValue + "/r=" + pathtemplate.MissingValue, false, ""},
		{"header RFC 3339", ms, `{}`, map[string][]string{"Event-Time": {"2026-01-02T03:04:05+01:00"}},
			"S/dt=2026-01-02/02/tenant=" + pathtemplate.MissingValue + "/r=" + pathtemplate.MissingValue, false, ""},
		{"bad header falls back", ms, `{}`, map[string][]string{"Event-Time": {"soon"}},
			"S/dt=2026-12-03/15/tenant=" + pathtemplate.MissingValue + "/r=" + pathtemplate.MissingValue, true, ""},
		{"bad header rejected", config.EventTime{Header: "Event-Time", Reject: true}, `{}`, map[string][]string{"Event-Time": {"soon"}}, "", false, "event_time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(contentOutput(t, tt.et), false)
			if err != nil {
				t.Fatal(err)
			}
			v := pathtemplate.Values{Stream: "S", Time: ingest}
			fellBack, err := c.Read([]byte(tt.data), tt.headers, ingest, &v)
			if tt.reject != "" {
				var ne *NoEventTimeError
				var te *formats.TypeError
				switch {
				case tt.reject == "event_time" && !errors.As(err, &ne):
					t.Fatalf("err = %v, want a NoEventTimeError", err)
				case tt.reject == "type" && !errors.As(err, &te):
					t.Fatalf("err = %v, want a TypeError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := contentOutput(t, tt.et).PathTemplate.Dir(&v); got != tt.want || fellBack != tt.fellBack {
				t.Errorf("dir %q, fell back %v; want %q, %v", got, fellBack, tt.want, tt.fellBack)
			}
		})
	}
}

func TestNoContentWithoutContentInThePath(t *testing.T) {
	out := &config.Output{PathTemplate: pathtemplate.MustParse("{stream}/{date}")}
	if c, err := New(out, false); c != nil || err != nil {
		t.Errorf("newContent = %v, %v; want nil for a path of the envelope alone", c, err)
	}
}

func TestContentReadDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c, err := New(contentOutput(t, config.EventTime{Column: "created_at"}), false)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"id":7,"created_at":"2026-11-01T10:00:00Z","tenant":"acme","items":[1,2,3]}`)
	headers := map[string][]string{"Region": {"eu"}}
	ingest := time.Now()
	var v pathtemplate.Values
	tpl := contentOutput(t, config.EventTime{}).PathTemplate
	buf := make([]byte, 0, 256)
	c.Read(data, headers, ingest, &v) // warm the scratch space
	if n := testing.AllocsPerRun(1, func() {
		for range 1000 {
			if _, err := c.Read(data, headers, ingest, &v); err != nil {
				t.Fatal(err)
			}
			buf = tpl.AppendDir(buf[:0], &v)
		}
	}); n != 0 {
		t.Errorf("1000 reads and renders made %v allocations, want 0", n)
	}
}

// BenchmarkRead is the cost a message pays for a path by content: its
// payload read for two typed columns, one an event time, and the
// directory rendered; BenchmarkRenderEnvelope is the baseline, a directory
// of the envelope alone.
func BenchmarkRead(b *testing.B) {
	out := &config.Output{
		PathTemplate: pathtemplate.MustParse("{stream}/dt={date}/tenant={column:tenant}"),
		Columns: []config.Column{
			{Name: "created_at", Source: "created_at", Type: formats.TypeTimestamp},
			{Name: "tenant", Source: "tenant", Type: formats.TypeString},
		},
		Time: config.EventTime{Column: "created_at"},
	}
	c, err := New(out, false)
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"order_id":"ord-000042","customer_id":"cus-0417","items":3,"total_cents":12999,"currency":"EUR","tenant":"acme","created_at":"2026-11-29T07:12:31.123Z"}`)
	ingest := time.Now()
	v := pathtemplate.Values{Stream: "EVENTS"}
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Read(data, nil, ingest, &v); err != nil {
			b.Fatal(err)
		}
		buf = out.PathTemplate.AppendDir(buf[:0], &v)
	}
}

func BenchmarkRenderEnvelope(b *testing.B) {
	tpl := pathtemplate.MustParse("{stream}/{subject}/{date}/{hour}")
	v := pathtemplate.Values{Stream: "EVENTS", Subject: "events.orders", Time: time.Now()}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = tpl.AppendDir(buf[:0], &v)
	}
}

// An event time outside the years 1 to 9999 (in UTC or in the connector's
// zone) is no event time: its message falls back or is rejected, saying
// why, and never renders a key from it. A typed column's value outside
// them in UTC is a type error, which on_type_error decides.
func TestAnEventTimeOutsideTheYears1To9999IsNone(t *testing.T) {
	ingest := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	east := time.FixedZone("east", 3600)
	west := time.FixedZone("west", -3600)
	tests := []struct {
		name    string
		et      config.EventTime
		data    string
		headers map[string][]string
		typeErr bool // the column's value is a type error
	}{
		{"header ms, year -1221", config.EventTime{Header: "Event-Time", Unit: "ms"}, `{}`, map[string][]string{"Event-Time": {"-100676332800000"}}, false},
		{"header ms, year 33658", config.EventTime{Header: "Event-Time", Unit: "ms"}, `{}`, map[string][]string{"Event-Time": {"999999999999999"}}, false},
		{"header us, the largest int64", config.EventTime{Header: "Event-Time", Unit: "us"}, `{}`, map[string][]string{"Event-Time": {"9223372036854775807"}}, false},
		{"header RFC 3339, year 0", config.EventTime{Header: "Event-Time", Unit: "ms"}, `{}`, map[string][]string{"Event-Time": {"0000-06-01T00:00:00Z"}}, false},
		{"column, year 0", config.EventTime{Column: "created_at"}, `{"created_at":"0000-12-31T23:00:00Z"}`, nil, true},
		{"column, year 10000 in its zone", config.EventTime{Column: "created_at", Location: east}, `{"created_at":"9999-12-31T23:30:00Z"}`, nil, false},
		{"column, year 0 in its zone", config.EventTime{Column: "created_at", Location: west}, `{"created_at":"0001-01-01T00:30:00Z"}`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(contentOutput(t, tt.et), false)
			if err != nil {
				t.Fatal(err)
			}
			v := pathtemplate.Values{Stream: "S", Time: ingest}
			fellBack, err := c.Read([]byte(tt.data), tt.headers, ingest, &v)
			if tt.typeErr {
				var te *formats.TypeError
				if !errors.As(err, &te) || !strings.Contains(err.Error(), "outside the years 0001 to 9999") {
					t.Errorf("err %v, want a TypeError saying the time is outside the years 0001 to 9999", err)
				}
				return
			}
			if err != nil || !fellBack || !v.Time.Equal(ingest) {
				t.Errorf("time_fallback ingest: fell back %v, time %v, err %v; want the ingest time", fellBack, v.Time, err)
			}
			tt.et.Reject = true
			if c, err = New(contentOutput(t, tt.et), false); err != nil {
				t.Fatal(err)
			}
			_, err = c.Read([]byte(tt.data), tt.headers, ingest, &v)
			var ne *NoEventTimeError
			if !errors.As(err, &ne) || !strings.Contains(ne.Why, "outside the years 0001 to 9999") {
				t.Errorf("time_fallback reject: err %v, want a NoEventTimeError saying the time is outside the years 0001 to 9999", err)
			}
		})
	}
}
