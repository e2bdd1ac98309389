package formats

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCompactJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" means not JSON
	}{
		{"an object is copied", `{"a":1}`, `{"a":1}`},
		{"whitespace between tokens is dropped", " {\n \"a\" : [ 1 , 2 ] ,\t\"b\":{ } }\r\n", `{"a":[1,2],"b":{}}`},
		{"whitespace inside strings is kept", `{"a b" : " x\u0020 "}`, `{"a b":" x\u0020 "}`},
		{"escapes are kept as written", `["\u00e9\/\n\"\\\b\f\r\t\uD83D\uDE00"]`, `["\u00e9\/\n\"\\\b\f\r\t\uD83D\uDE00"]`},
		{"a lone surrogate escape is JSON", `"\ud800"`, `"\ud800"`},
		{"UTF-8 is kept", "\"é日本😀\u2028\"", "\"é日本😀\u2028\""},
		{"big integers keep their digits", `123456789012345678901234567890`, `123456789012345678901234567890`},
		{"huge exponents keep their digits", `[1.0e400,-0.0E-0,1E+2,0,-0]`, `[1.0e400,-0.0E-0,1E+2,0,-0]`},
		{"a string is a value", ` "str" `, `"str"`},
		{"true is a value", `true`, `true`},
		{"false is a value", "\tfalse\n", `false`},
		{"null is a value", `null`, `null`},
		{"nested containers", `[[],[{}],{"a":[{"b":[]}]}]`, `[[],[{}],{"a":[{"b":[]}]}]`},
		{"empty input is not JSON", ``, ``},
		{"whitespace alone is not JSON", " \n", ``},
		{"text is not JSON", `hello`, ``},
		{"two values are not JSON", `{"a":1} {}`, ``},
		{"trailing text is not JSON", `1 x`, ``},
		{"a missing value is not JSON", `{"a":}`, ``},
		{"a trailing comma in an array is not JSON", `[1,]`, ``},
		{"a trailing comma in an object is not JSON", `{"a":1,}`, ``},
		{"a missing colon is not JSON", `{"a" 1}`, ``},
		{"a key must be a string", `{a:1}`, ``},
		{"mismatched brackets are not JSON", `[1}`, ``},
		{"an unclosed array is not JSON", `[1`, ``},
		{"an unclosed string is not JSON", `"abc`, ``},
		{"a leading zero is not JSON", `01`, ``},
		{"a bare minus is not JSON", `-`, ``},
		{"a fraction needs digits", `1.`, ``},
		{"an exponent needs digits", `1e+`, ``},
		{"a leading plus is not JSON", `+1`, ``},
		{"a leading dot is not JSON", `.5`, ``},
		{"a truncated literal is not JSON", `tru`, ``},
		{"a misspelt literal is not JSON", `nul1`, ``},
		{"a longer literal is not JSON", `nulll`, ``},
		{"an unknown escape is not JSON", `"\x"`, ``},
		{"a short unicode escape is not JSON", `"\u12"`, ``},
		{"a unicode escape needs hex", `"\u12g4"`, ``},
		{"a tab inside a string is not JSON", "\"a\tb\"", ``},
		{"a newline inside a string is not JSON", "\"a\nb\"", ``},
		{"a NUL inside a string is not JSON", "\"a\x00b\"", ``},
		{"invalid UTF-8 inside a string is not JSON", "\"a\xffb\"", ``},
		{"a truncated UTF-8 sequence is not JSON", "\"\xe6\x97\"", ``},
		{"an overlong UTF-8 encoding is not JSON", "\"\xc0\xaf\"", ``},
		{"a UTF-8 encoded surrogate is not JSON", "\"\xed\xa0\x80\"", ``},
		{"a byte order mark is not JSON", "\xef\xbb\xbf{}", ``},
		{"a non-breaking space is not whitespace", "\u00a0{}", ``},
		{"a vertical tab is not whitespace", "\v{}", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("prefix")
			got, ok := appendCompactJSON(dst, []byte(tt.in))
			if ok != (tt.want != "") {
				t.Fatalf("appendCompactJSON(%q) ok = %v, want %v", tt.in, ok, !ok)
			}
			if want := "prefix" + tt.want; string(got) != want {
				t.Errorf("appendCompactJSON(%q) = %q, want %q", tt.in, got, want)
			}
			checkAgainstEncodingJSON(t, []byte(tt.in))
		})
	}
}

func TestCompactJSONNestingIsLimitedTo10000(t *testing.T) {
	tests := []struct {
		name  string
		depth int
		open  string
		close string
		ok    bool
	}{
		{"10000 arrays are JSON", maxDepth, "[", "]", true},
		{"10001 arrays are not JSON", maxDepth + 1, "[", "]", false},
		{"10000 objects are JSON", maxDepth, `{"k":`, "}", true},
		{"10001 objects are not JSON", maxDepth + 1, `{"k":`, "}", false},
		{"a million arrays are not JSON and do not crash", 1_000_000, "[", "]", false},
		{"a million unclosed arrays are not JSON", 1_000_000, "[", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The innermost value is an empty container, which counts as
			// a level of its own.
			inner := tt.open[:1] + tt.close
			if tt.close == "" {
				inner = ""
			}
			in := []byte(strings.Repeat(tt.open, tt.depth-1) + inner + strings.Repeat(tt.close, tt.depth-1))
			got, ok := appendCompactJSON(nil, in)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ok && !bytes.Equal(got, in) {
				t.Errorf("compacted form differs from the compact input")
			}
			if tt.depth <= maxDepth+1 {
				checkAgainstEncodingJSON(t, in)
			}
		})
	}
}

// checkAgainstEncodingJSON checks that appendCompactJSON accepts exactly
// what json.Valid and utf8.Valid accept, and compacts as json.Compact does.
func checkAgainstEncodingJSON(t *testing.T, in []byte) {
	t.Helper()
	got, ok := appendCompactJSON([]byte("prefix"), in)
	want := json.Valid(in) && utf8.Valid(in)
	if ok != want {
		t.Fatalf("appendCompactJSON(%q) ok = %v, json.Valid && utf8.Valid = %v", in, ok, want)
	}
	if !ok {
		if string(got) != "prefix" {
			t.Fatalf("appendCompactJSON(%q) = %q after rejecting, want the prefix alone", in, got)
		}
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, in); err != nil {
		t.Fatalf("json.Compact(%q): %v", in, err)
	}
	if want := "prefix" + compact.String(); string(got) != want {
		t.Fatalf("appendCompactJSON(%q) = %q, json.Compact gives %q", in, got, want)
	}
}

func FuzzPayload(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `true`, `false`, `0`, `-1.5e+10`, `"a"`,
		` {"a" : [1, 2.5, "x\n\u00e9", null, true, {"b": {}}]} `,
		`123456789012345678901234567890`, `1.0e400`, `"\ud800"`, `"é😀"`,
		`{"a":}`, `[1,]`, `01`, `"\x"`, "\"\xff\"", "\"a\tb\"", `[[[[[`, `]`,
		"\xef\xbb\xbf{}", `nulll`, `{"a":1}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAgainstEncodingJSON(t, in)
	})
}

// benchPayloads are JSON payloads as producers send them: compact, as
// encoding/json writes, and indented.
var benchPayloads = []struct{ name, data string }{
	{"compact", `{"id":123457,"user":{"id":"u-004217","country":"DE"},"amount":731.05,"paid":true,"created_at":"2026-12-01T23:38:45.123Z","page":"/blog/jetstream-to-s3","note":"alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform"}`},
	{"escaped", `{"id":123457,"msg":"caf\u00e9 \"quoted\" \\ back","tags":["a","b","c"],"utf8":"日本語のテキスト, ünïcödé","n":[1,-2.5,3e10,null,false]}`},
	{"indented", "{\n  \"id\": 123457,\n  \"user\": {\n    \"id\": \"u-004217\",\n    \"country\": \"DE\"\n  },\n  \"amount\": 731.05,\n  \"tags\": [\n    \"a\",\n    \"b\"\n  ],\n  \"note\": \"alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike\"\n}\n"},
}

func BenchmarkCompactJSON(b *testing.B) {
	for _, p := range benchPayloads {
		b.Run(p.name, func(b *testing.B) {
			src := []byte(p.data)
			dst := make([]byte, 0, 2*len(src))
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				var ok bool
				if dst, ok = appendCompactJSON(dst[:0], src); !ok {
					b.Fatal("not JSON")
				}
			}
		})
	}
}
