package pathtemplate_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jetlake/jetlake/pathtemplate"
)

var fuzzTime = time.Date(2026, 1, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600))

// FuzzRender checks the keys of the default template with a subject token
// added, for any stream and subject: they stay under the prefix, have no
// empty or relative segment, are valid UTF-8, fit in S3's limit, and two
// subjects give two keys.
func FuzzRender(f *testing.F) {
	f.Add("ORDERS", "orders.eu.created", "orders.eu.updated")
	f.Add("", "", ".")
	f.Add(".", "..", "...")
	f.Add("a/b", "a.b", "a%2Eb")
	f.Add("S", "%00", "~")
	f.Add("日本", "é.\xff", "\xc3\xa9")
	f.Add("S", strings.Repeat("a", 129), strings.Repeat("a", 130))
	f.Add(strings.Repeat("/", 300), "x"+strings.Repeat("é", 100), "x"+strings.Repeat("é", 101))
	tpl := pathtemplate.MustParse("{stream}/{subject}/{subject:2}/{date}/{hour}")
	f.Fuzz(func(t *testing.T, stream, a, b string) {
		keyA := renderKey(t, tpl, stream, a)
		keyB := renderKey(t, tpl, stream, b)
		escA := string(pathtemplate.AppendEscaped(nil, a))
		escB := string(pathtemplate.AppendEscaped(nil, b))
		checkEscaped(t, a, escA)
		checkEscaped(t, b, escB)
		// "" and NUL share "%00"; neither is a NATS subject. Shortened
		// values differ by their hash, so they are checked as well.
		if a != b && !(emptyOrNUL(a) && emptyOrNUL(b)) {
			if escA == escB {
				t.Errorf("AppendEscaped(%q) = AppendEscaped(%q) = %q", a, b, escA)
			}
			if keyA == keyB {
				t.Errorf("subjects %q and %q both give key %q", a, b, keyA)
			}
		}
	})
}

func emptyOrNUL(s string) bool { return s == "" || s == "\x00" }

func renderKey(t *testing.T, tpl *pathtemplate.Template, stream, subject string) string {
	t.Helper()
	dir := tpl.Dir(&pathtemplate.Values{Stream: stream, Subject: subject, Time: fuzzTime})
	// Every value renders to at most MaxValueLen bytes, so the key fits
	// whatever the length of the stream and subject.
	key, err := pathtemplate.Key("raw", dir, 1, 2, "jsonl")
	if err != nil {
		t.Fatalf("stream %q, subject %q: %v", stream, subject, err)
	}
	if !strings.HasPrefix(key, "raw/") {
		t.Errorf("key %q does not start with raw/", key)
	}
	if !utf8.ValidString(key) {
		t.Errorf("key %q is not valid UTF-8", key)
	}
	segs := strings.Split(key, "/")
	if len(segs) != 7 {
		t.Errorf("key %q has %d segments, want 7", key, len(segs))
	}
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." {
			t.Errorf("key %q has segment %q", key, seg)
		}
	}
	if len(key) > pathtemplate.MaxKeyLen {
		t.Errorf("key %q is %d bytes", key, len(key))
	}
	return key
}

// FuzzParse checks that Parse never panics, that its errors point into the
// template, and that a template it accepts round-trips and renders a
// directory without empty or relative segments.
func FuzzParse(f *testing.F) {
	for _, src := range []string{
		"", "{stream}/{subject}/{date}/{hour}", "{stream}/date={date}/hour={hour}",
		"{year}/{month}/{day}/{hour}/{minute}/{consumer}", "{subject:1}.{subject:64}",
		"/", "a//b", "./x", "x/..", "v1.0/./x", "{", "}", "{}", "{subject:0}", "{subject:65}",
		"a\\b", "a\x00b", "{stream}\xff", "données/{stream}", "{column:tenant}/{header:X-Id}", "{column:}",
	} {
		f.Add(src)
	}
	values := []*pathtemplate.Values{
		{Stream: "ORDERS", Subject: "orders.eu.created", Consumer: "c", Time: fuzzTime},
		{},
		{Stream: ".", Subject: "..", Consumer: "/"},
		{Stream: strings.Repeat("/", 200), Subject: strings.Repeat("a.", 100), Consumer: "\xff"},
		{
			Columns: []pathtemplate.Field{{Name: "tenant", Text: []byte("..")}, {Name: "x", Missing: true}},
			Headers: map[string][]string{"X-Id": {"/"}, "": {"."}},
		},
	}
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := pathtemplate.Parse(src)
		if err != nil {
			var se *pathtemplate.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %v is a %T", src, err, err)
			}
			if se.Offset < 0 || se.Offset >= len(src) {
				t.Errorf("Parse(%q) error offset %d is outside the template", src, se.Offset)
			}
			return
		}
		if tpl.String() != src {
			t.Errorf("Parse(%q).String() = %q", src, tpl.String())
		}
		again, err := pathtemplate.Parse(tpl.String())
		if err != nil {
			t.Fatalf("Parse(%q) accepted, then rejected: %v", src, err)
		}
		if !reflect.DeepEqual(again.Parts(), tpl.Parts()) {
			t.Errorf("Parse(%q) parts differ on the second parse: %+v, %+v", src, tpl.Parts(), again.Parts())
		}
		for _, v := range values {
			dir := tpl.Dir(v)
			if (dir == "") != (src == "") {
				t.Errorf("%q renders %q", src, dir)
			}
			if dir == "" {
				continue
			}
			if utf8.ValidString(src) && !utf8.ValidString(dir) {
				t.Errorf("%q renders %q, not valid UTF-8", src, dir)
			}
			for _, seg := range strings.Split(dir, "/") {
				if seg == "" || seg == "." || seg == ".." {
					t.Errorf("%q renders %q, with segment %q", src, dir, seg)
				}
			}
			key := string(pathtemplate.AppendKey(nil, "raw", []byte(dir), 1, 2, "jsonl"))
			if strings.Contains(key, "//") {
				t.Errorf("%q renders key %q", src, key)
			}
		}
	})
}
