package pathtemplate_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/jetlake/jetlake/pathtemplate"
)

func TestParse(t *testing.T) {
	lit := func(s string) pathtemplate.Part { return pathtemplate.Part{Var: pathtemplate.VarLiteral, Text: s} }
	v := func(v pathtemplate.Var) pathtemplate.Part { return pathtemplate.Part{Var: v} }
	tok := func(n int) pathtemplate.Part { return pathtemplate.Part{Var: pathtemplate.VarSubjectToken, Token: n} }
	tests := []struct {
		src  string
		want []pathtemplate.Part
	}{
		{"", nil},
		{"{stream}", []pathtemplate.Part{v(pathtemplate.VarStream)}},
		{"{subject}", []pathtemplate.Part{v(pathtemplate.VarSubject)}},
		{"{consumer}", []pathtemplate.Part{v(pathtemplate.VarConsumer)}},
		{"{date}", []pathtemplate.Part{v(pathtemplate.VarDate)}},
		{"{year}", []pathtemplate.Part{v(pathtemplate.VarYear)}},
		{"{month}", []pathtemplate.Part{v(pathtemplate.VarMonth)}},
		{"{day}", []pathtemplate.Part{v(pathtemplate.VarDay)}},
		{"{hour}", []pathtemplate.Part{v(pathtemplate.VarHour)}},
		{"{minute}", []pathtemplate.Part{v(pathtemplate.VarMinute)}},
		{"{subject:1}", []pathtemplate.Part{tok(1)}},
		{"{subject:64}", []pathtemplate.Part{tok(64)}},
		{"{stream}/{subject}/{date}/{hour}", []pathtemplate.Part{
			v(pathtemplate.VarStream), lit("/"), v(pathtemplate.VarSubject), lit("/"),
			v(pathtemplate.VarDate), lit("/"), v(pathtemplate.VarHour)}},
		{"{stream}/date={date}/hour={hour}", []pathtemplate.Part{
			v(pathtemplate.VarStream), lit("/date="), v(pathtemplate.VarDate), lit("/hour="), v(pathtemplate.VarHour)}},
		{"raw", []pathtemplate.Part{lit("raw")}},
		{"{year}{month}{day}", []pathtemplate.Part{
			v(pathtemplate.VarYear), v(pathtemplate.VarMonth), v(pathtemplate.VarDay)}},
		{"{stream}.{subject:2}", []pathtemplate.Part{v(pathtemplate.VarStream), lit("."), tok(2)}},
		{"raw events/données/{stream}", []pathtemplate.Part{lit("raw events/données/"), v(pathtemplate.VarStream)}},
		{".hidden/..x/...", []pathtemplate.Part{lit(".hidden/..x/...")}},
		{"{stream}./.{date}", []pathtemplate.Part{v(pathtemplate.VarStream), lit("./."), v(pathtemplate.VarDate)}},
		{"a%2Fb~", []pathtemplate.Part{lit("a%2Fb~")}},
	}
	for _, tt := range tests {
		tpl, err := pathtemplate.Parse(tt.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.src, err)
			continue
		}
		if got := tpl.Parts(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q).Parts() = %+v, want %+v", tt.src, got, tt.want)
		}
		if got := tpl.String(); got != tt.src {
			t.Errorf("Parse(%q).String() = %q", tt.src, got)
		}
	}
}

func TestParseRejects(t *testing.T) {
	const allowed = "; allowed: {stream}, {subject}, {subject:N}, {consumer}, {date}, {year}, {month}, {day}, {hour}, {minute}, {column:<name>}, {header:<Name>}"
	tests := []struct {
		src    string
		offset int
		msg    string
	}{
		{"/", 0, "must not start or end with '/'"},
		{"/{stream}", 0, "must not start or end with '/'"},
		{"{stream}/", 8, "must not start or end with '/'"},
		{"raw/{stream}/", 12, "must not start or end with '/'"},
		{"/{bogus}/", 0, "must not start or end with '/'"},

		{"a//b", 1, "empty path segment ('//')"},
		{"{stream}//{date}", 8, "empty path segment ('//')"},
		{"a/b//c//d", 3, "empty path segment ('//')"},

		{".", 0, `path segment "." is not allowed`},
		{"..", 0, `path segment ".." is not allowed`},
		{"./{stream}", 0, `path segment "." is not allowed`},
		{"{stream}/..", 9, `path segment ".." is not allowed`},
		{"{stream}/../{date}", 9, `path segment ".." is not allowed`},
		// The offset is that of the segment, not of the first dot.
		{"v1.0/./x", 5, `path segment "." is not allowed`},
		{"a..b/..", 5, `path segment ".." is not allowed`},
		{"{stream}.x/./{date}", 11, `path segment "." is not allowed`},

		{"}", 0, "unmatched '}'"},
		{"{stream}}", 8, "unmatched '}'"},
		{"a}{stream}", 1, "unmatched '}'"},
		{"{", 0, "unterminated '{'"},
		{"a{stream", 1, "unterminated '{'"},
		{"{stream}/{", 9, "unterminated '{'"},

		{"{}", 0, "unknown variable {}" + allowed},
		{"{Stream}", 0, "unknown variable {Stream}" + allowed},
		{"x/{subjct}", 2, "unknown variable {subjct}" + allowed},
		{"{ stream }", 0, "unknown variable { stream }" + allowed},
		{"{{stream}}", 0, "unknown variable {{stream}" + allowed},
		{"{stream/x}", 0, "unknown variable {stream/x}" + allowed},
		{"{subject:1:2}", 0, `{subject:N} needs N between 1 and 64, got "1:2"`},
		{"{subject:}", 0, `{subject:N} needs N between 1 and 64, got ""`},
		{"{subject:0}", 0, `{subject:N} needs N between 1 and 64, got "0"`},
		{"{subject:65}", 0, `{subject:N} needs N between 1 and 64, got "65"`},
		{"{subject:-1}", 0, `{subject:N} needs N between 1 and 64, got "-1"`},
		{"{subject:x}", 0, `{subject:N} needs N between 1 and 64, got "x"`},
		{"{stream}/{subject:99999999999999999999}", 9, `{subject:N} needs N between 1 and 64, got "99999999999999999999"`},

		{"a\x00", 1, `byte '\x00' is not allowed in literal text`},
		{"a\tb", 1, `byte '\t' is not allowed in literal text`},
		{"{stream}\n", 8, `byte '\n' is not allowed in literal text`},
		{"\x1f", 0, `byte '\x1f' is not allowed in literal text`},
		{"a\x7f", 1, `byte '\x7f' is not allowed in literal text`},
		{`a\b`, 1, `byte '\\' is not allowed in literal text`},
		{`{stream}\{date}`, 8, `byte '\\' is not allowed in literal text`},

		// Every bad variable is named, not only the first.
		{"{subj}/{hours}", 0, "unknown variable {subj}; at byte 7: unknown variable {hours}; allowed: " + pathtemplate.Names},
		{"{stream}/{subject:0}/{hours}", 9, `{subject:N} needs N between 1 and 64, got "0"; at byte 21: unknown variable {hours}; allowed: ` + pathtemplate.Names},
		{"{subject:0}/{subject:99}", 0, `{subject:N} needs N between 1 and 64, got "0"; at byte 12: {subject:N} needs N between 1 and 64, got "99"`},
	}
	for _, tt := range tests {
		tpl, err := pathtemplate.Parse(tt.src)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want an error", tt.src, tpl)
			continue
		}
		var se *pathtemplate.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) error %v is a %T, want a *SyntaxError", tt.src, err, err)
			continue
		}
		if se.Offset != tt.offset || se.Msg != tt.msg {
			t.Errorf("Parse(%q) = at byte %d: %s\nwant at byte %d: %s", tt.src, se.Offset, se.Msg, tt.offset, tt.msg)
		}
		if tpl != nil {
			t.Errorf("Parse(%q) returned a template with its error", tt.src)
		}
	}
}

func TestSyntaxErrorSaysWhereAndWhat(t *testing.T) {
	_, err := pathtemplate.Parse("{stream}/{subjct}")
	const want = "pathtemplate: at byte 9: unknown variable {subjct}; allowed: " + pathtemplate.Names
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v, want %s", err, want)
	}
}

func TestMustParsePanicsOnABadTemplate(t *testing.T) {
	defer func() {
		r := recover()
		if _, ok := r.(*pathtemplate.SyntaxError); !ok {
			t.Errorf("MustParse panicked with %#v, want a *SyntaxError", r)
		}
	}()
	pathtemplate.MustParse("{nope}")
}

func TestUses(t *testing.T) {
	tests := []struct {
		src         string
		stream      bool
		usesSubject bool
	}{
		{"", false, false},
		{"{stream}/{date}", true, false},
		{"{stream}/{subject}", true, true},
		{"{subject:2}/{hour}", false, true},
		{"stream/subject", false, false},
	}
	for _, tt := range tests {
		tpl := pathtemplate.MustParse(tt.src)
		if got := tpl.Uses(pathtemplate.VarStream); got != tt.stream {
			t.Errorf("%q: Uses(VarStream) = %v, want %v", tt.src, got, tt.stream)
		}
		if got := tpl.UsesSubject(); got != tt.usesSubject {
			t.Errorf("%q: UsesSubject() = %v, want %v", tt.src, got, tt.usesSubject)
		}
	}
}
