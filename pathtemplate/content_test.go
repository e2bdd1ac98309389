package pathtemplate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/pathtemplate"
)

func TestRenderColumnsAndHeaders(t *testing.T) {
	cols := []pathtemplate.Field{
		{Name: "tenant", Text: []byte("acme corp")},
		{Name: "region", Missing: true},
		{Name: "long", Text: []byte(strings.Repeat("x", 300))},
	}
	headers := map[string][]string{"Tenant": {"t/1", "t2"}, "Empty": {""}, "None": {}}
	v := &pathtemplate.Values{Stream: "S", Columns: cols, Headers: headers}
	tests := []struct{ tpl, want string }{
		{"tenant={column:tenant}", "tenant=acme%20corp"},
		{"r={column:region}", "r=" + pathtemplate.MissingValue},
		{"r={column:undeclared}", "r=" + pathtemplate.MissingValue},
		{"h={header:Tenant}", "h=t%2F1"},
		{"h={header:tenant}", "h=" + pathtemplate.MissingValue}, // names match as written
		{"h={header:Empty}", "h=%00"},
		{"h={header:None}", "h=" + pathtemplate.MissingValue},
		{"{stream}/{column:tenant}/{header:Tenant}", "S/acme%20corp/t%2F1"},
	}
	for _, tt := range tests {
		if got := pathtemplate.MustParse(tt.tpl).Dir(v); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.tpl, got, tt.want)
		}
	}
	long := pathtemplate.MustParse("{column:long}").Dir(v)
	if len(long) != pathtemplate.MaxValueLen || long != string(pathtemplate.AppendEscaped(nil, strings.Repeat("x", 300))) {
		t.Errorf("a long column value renders as %q (%d bytes), not as a long subject would", long, len(long))
	}
}

func TestRenderTimeInLocation(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	ts := time.Date(2026, 3, 1, 2, 30, 0, 0, time.UTC) // 21:30 the day before in New York
	tpl := pathtemplate.MustParse("{date}/{hour}")
	if got := tpl.Dir(&pathtemplate.Values{Time: ts}); got != "2026-03-01/02" {
		t.Errorf("UTC: %q", got)
	}
	if got := tpl.Dir(&pathtemplate.Values{Time: ts, Location: ny}); got != "2026-02-28/21" {
		t.Errorf("New York: %q", got)
	}
}

func TestParseContentVariables(t *testing.T) {
	tpl := pathtemplate.MustParse("{column:tenant}/{header:X-Region}/{column:tenant}/{column:day}")
	if got := strings.Join(tpl.Names(pathtemplate.VarColumn), ","); got != "tenant,day" {
		t.Errorf("column names %q", got)
	}
	if got := strings.Join(tpl.Names(pathtemplate.VarHeader), ","); got != "X-Region" {
		t.Errorf("header names %q", got)
	}
	if tpl.UsesTime() || !pathtemplate.MustParse("x/{hour}").UsesTime() {
		t.Error("UsesTime")
	}
	for _, bad := range []string{"{column:}", "{column:Tenant}", "{column:1x}", "{column:a-b}", "{header:}", "{header:a b}", "{header:a:b}"} {
		if _, err := pathtemplate.Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
}

func TestAppendDirWithContentDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tpl := pathtemplate.MustParse("{stream}/{column:tenant}/{header:Region}/{date}")
	v := &pathtemplate.Values{
		Stream: "S", Time: time.Now(), Location: time.UTC,
		Columns: []pathtemplate.Field{{Name: "tenant", Text: []byte("acme")}},
		Headers: map[string][]string{"Region": {"eu"}},
	}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(1, func() {
		for range 1000 {
			buf = tpl.AppendDir(buf[:0], v)
		}
	}); n != 0 {
		t.Errorf("1000 AppendDir calls made %v allocations, want 0", n)
	}
}
