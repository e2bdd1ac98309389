package pathtemplate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/pathtemplate"
)

// hostileTemplate renders every variable, each at the start of a segment
// and a column in the middle of one as well.
const hostileTemplate = "{stream}/{subject}/{subject:2}/{consumer}/{column:c}/x{column:c}/{header:H}/{date}/{year}/{month}/{day}/{hour}/{minute}/{year}{month}{day}{hour}{minute}"

// hostileBudget is the longest hostileTemplate renders for a stream and a
// consumer, counted here rather than by MaxDirLen: the stream and the
// consumer as they are written at the start of a segment, each of the 5
// publisher's values at most MaxValueLen bytes, the date 10, the year 4,
// the other time parts 2 each, and the 14 bytes of literal text ("x" and
// 13 "/").
func hostileBudget(stream, consumer string) int {
	return len(pathtemplate.AppendSegment(nil, stream)) + len(pathtemplate.AppendSegment(nil, consumer)) + 5*pathtemplate.MaxValueLen + 10 + 4 + 4*2 + 4 + 4*2 + 14
}

// FuzzAppendDir renders every variable from any time, in any zone, and any
// publisher's values: every byte of the directory is in the escaped
// alphabet, no segment is empty, "." or ".." or starts with "_jetlake",
// and the directory fits the length config budgets for it.
func FuzzAppendDir(f *testing.F) {
	f.Add(int64(0), int64(0), 0, "ORDERS", "orders.eu.created", "acme", "eu")
	f.Add(int64(-100676332800), int64(0), 0, "S", "a.b", "x", "y")            // year -1221
	f.Add(int64(-62135596800), int64(0), -3600, "S", "a.b", "", ".")          // year 1 in UTC, year 0 an hour west
	f.Add(int64(253402300799), int64(999999999), 3600, "S", "a.b", "..", "%") // 9999-12-31T23:59:59 UTC, year 10000 an hour east
	f.Add(int64(9223372036), int64(854775807), 0, "S", "_jetlake.lost", "_jetlake", "_jetlake/rejected")
	f.Add(int64(-9223372036), int64(-854775808), 50400, "_jetlake", "_jetlakes", "_JETLAKE", "__jetlake")
	f.Add(int64(1<<62), int64(0), -50400, "S", "\x00.\x1b", "\xff", "日本")
	f.Add(int64(-1<<62), int64(0), 0, "S", strings.Repeat("_jetlake", 40), strings.Repeat("%", 200), "")
	tpl := pathtemplate.MustParse(hostileTemplate)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int, stream, subject, column, header string) {
		v := &pathtemplate.Values{
			Stream: stream, Subject: subject, Consumer: "exporter",
			Time:    time.Unix(sec, nsec),
			Columns: []pathtemplate.Field{{Name: "c", Text: []byte(column)}},
			Headers: map[string][]string{"H": {header}},
		}
		if offset%3 != 0 {
			v.Location = time.FixedZone("Z", offset%(50*3600))
		}
		dir := tpl.Dir(v)
		for i := 0; i < len(dir); i++ {
			if c := dir[i]; !escapedByte(c) && c != '/' {
				t.Fatalf("%q: byte %q at %d is not in the escaped alphabet", dir, c, i)
			}
		}
		for _, seg := range strings.Split(dir, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, pathtemplate.OwnDir) {
				t.Fatalf("%q has segment %q", dir, seg)
			}
		}
		if n, budget := len(dir), hostileBudget(stream, "exporter"); n > budget {
			t.Fatalf("%q is %d bytes, more than the %d budgeted", dir, n, budget)
		}
		if n, max := len(dir), tpl.MaxDirLen(stream, "exporter"); n > max {
			t.Fatalf("%q is %d bytes, more than MaxDirLen's %d", dir, n, max)
		}
	})
}

// escapedByte reports whether c is a byte escaping writes: [A-Za-z0-9._-],
// and "%" and hex digits of an escape, and "~" of a shortened value.
func escapedByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-%~", c) >= 0
}

func TestDirOfATimeOutsideYears1To9999(t *testing.T) {
	tpl := pathtemplate.MustParse("{date}/{year}/{month}/{day}/{hour}/{minute}")
	east := time.FixedZone("east", 3600)
	tests := []struct {
		name string
		v    pathtemplate.Values
		want string
	}{
		{"year -1221", pathtemplate.Values{Time: time.Date(-1221, 6, 1, 10, 0, 0, 0, time.UTC)}, "0001-01-01/0001/01/01/00/00"},
		{"year 0", pathtemplate.Values{Time: time.Date(0, 12, 31, 23, 0, 0, 0, time.UTC)}, "0001-01-01/0001/01/01/00/00"},
		{"year 1", pathtemplate.Values{Time: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}, "0001-01-01/0001/01/01/00/00"},
		{"year 9999", pathtemplate.Values{Time: time.Date(9999, 12, 31, 23, 59, 0, 0, time.UTC)}, "9999-12-31/9999/12/31/23/59"},
		{"year 10000", pathtemplate.Values{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "9999-12-31/9999/12/31/23/59"},
		{"year 292277026596", pathtemplate.Values{Time: time.Unix(1<<63-1, 0)}, "9999-12-31/9999/12/31/23/59"},
		{"year 10000 in its zone", pathtemplate.Values{Time: time.Date(9999, 12, 31, 23, 30, 0, 0, time.UTC), Location: east}, "9999-12-31/9999/12/31/23/59"},
		{"year 9999 in its zone", pathtemplate.Values{Time: time.Date(9999, 12, 31, 22, 30, 0, 0, time.UTC), Location: east}, "9999-12-31/9999/12/31/23/30"},
	}
	for _, tt := range tests {
		if got := tpl.Dir(&tt.v); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestAValueNeverStartsASegmentWithOwnDir(t *testing.T) {
	v := &pathtemplate.Values{
		Stream: "_jetlake", Subject: "_jetlake.lost",
		Columns: []pathtemplate.Field{{Name: "c", Text: []byte("_jetlake")}},
		Headers: map[string][]string{"H": {"_jetlakeX"}},
	}
	tests := []struct{ tpl, want string }{
		{"{stream}", "%5Fjetlake"},
		{"{subject}", "%5Fjetlake.lost"},
		{"{subject:1}/{subject:2}", "%5Fjetlake/lost"},
		{"{column:c}/{header:H}", "%5Fjetlake/%5FjetlakeX"},
		// Only where the value starts the segment: elsewhere it can not
		// make one start with "_jetlake".
		{"x{column:c}/a={header:H}", "x_jetlake/a=_jetlakeX"},
		{"{stream}{column:c}", "%5Fjetlake_jetlake"},
	}
	for _, tt := range tests {
		if got := pathtemplate.MustParse(tt.tpl).Dir(v); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.tpl, got, tt.want)
		}
	}
	// "%" is always escaped, so "%5F" at the start of a value's text is
	// written only for a leading "_" and the escaping stays injective.
	a := pathtemplate.MustParse("{column:c}").Dir(&pathtemplate.Values{Columns: []pathtemplate.Field{{Name: "c", Text: []byte("%5Fjetlake")}}})
	if a != "%255Fjetlake" {
		t.Errorf("%%5Fjetlake renders %q", a)
	}
}
