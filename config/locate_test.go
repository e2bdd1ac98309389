package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestLocateFindsTheLineOfEveryKey(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want map[string]int
	}{
		{
			name: "tables and arrays of tables",
			src: `name = "x"
[nats]
url = "u"

[[streams]]
stream = "A"
[[streams]]
# a comment
  stream = "B"   # another
[streams.extra]
k = 1
`,
			want: map[string]int{
				"name": 1, "nats": 2, "nats.url": 3,
				"streams": 5, "streams[1]": 5, "streams[1].stream": 6,
				"streams[2]": 7, "streams[2].stream": 9,
				"streams[2].extra": 10, "streams[2].extra.k": 11,
			},
		},
		{
			name: "dotted and quoted keys",
			src: `a.b = 1
"c.d" . 'e' = 2
[ "x y" . z ]
"" = 3
`,
			want: map[string]int{
				"a": 1, "a.b": 1, `"c.d"`: 2, `"c.d".e`: 2,
				`"x y"`: 3, `"x y".z`: 3, `"x y".z.""`: 4,
			},
		},
		{
			name: "multi-line values",
			src: `s = """
one = 1
[not]
"""
t = '''
two = 2'''
arr = [
  1, # one
  [2, 3],
  { k = "}" },
]
u = "quote \" and \u0041"
after = true
`,
			want: map[string]int{
				"s": 1, "t": 5, "arr": 7, "arr[1]": 8, "arr[2]": 9, "arr[2][2]": 9,
				"arr[3]": 10, "arr[3].k": 10, "u": 12, "after": 13,
			},
		},
		{
			name: "quotes before a closing delimiter",
			src:  "s = \"\"\"a\"\"\"\"\"\nnext = 1\nl = '''b'''''\nlast = 2\n",
			want: map[string]int{"s": 1, "next": 2, "l": 3, "last": 4},
		},
		{
			name: "inline tables across lines",
			src: `rotation = { max_file_size = "1B",
  extra = 1 }
streams = [
  { stream = "A" },
  { stream = "B",
    bogus = true },
]
`,
			want: map[string]int{
				"rotation": 1, "rotation.max_file_size": 1, "rotation.extra": 2,
				"streams": 3, "streams[1]": 4, "streams[1].stream": 4,
				"streams[2]": 5, "streams[2].stream": 5, "streams[2].bogus": 6,
			},
		},
		{
			name: "an explicit header wins over an implicit parent",
			src:  "[a.b]\nx = 1\n[a]\ny = 2\n",
			want: map[string]int{"a": 3, "a.b": 1, "a.b.x": 2, "a.y": 4},
		},
		{
			name: "nested arrays of tables",
			src:  "[[a]]\n[[a.b]]\n[[a]]\n[[a.b]]\n[[a.b]]\nk = 1\n",
			want: map[string]int{"a[1]": 1, "a[1].b[1]": 2, "a[2]": 3, "a[2].b[1]": 4, "a[2].b[2]": 5, "a[2].b[2].k": 6},
		},
		{
			name: "CRLF and a byte order mark",
			src:  "\xef\xbb\xbfa = 1\r\n[t]\r\nb = 2\r\n",
			want: map[string]int{"a": 1, "t": 2, "t.b": 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v map[string]any
			if _, err := toml.Decode(tt.src, &v); err != nil {
				t.Fatalf("test source is not TOML: %v", err)
			}
			ix := locate(tt.src)
			for k, want := range tt.want {
				if got, ok := ix.lines[k]; !ok || got != want {
					t.Errorf("line of %s = %d (found %v), want %d", k, got, ok, want)
				}
			}
		})
	}
}

func TestLineFallsBackToTheEnclosingTable(t *testing.T) {
	ix := locate("name = 1\n\n[rotation]\nmax_file_age = 1\n[[streams]]\n[[streams]]\n")
	tests := []struct {
		p    keyPath
		want int
	}{
		{keyPath{}.key("rotation").key("max_file_size"), 3},
		{keyPath{}.key("rotation").key("max_file_age"), 4},
		{keyPath{}.key("streams").index(2).key("ack_wait"), 6},
		{keyPath{}.key("s3").key("bucket"), 1},
		{keyPath{}.key("shutdown_timeout"), 1},
	}
	for _, tt := range tests {
		if got := ix.line(tt.p); got != tt.want {
			t.Errorf("line(%s) = %d, want %d", tt.p, got, tt.want)
		}
	}
}

func TestKeyPathString(t *testing.T) {
	tests := []struct {
		p    keyPath
		want string
	}{
		{keyPath{}.key("rotation").key("max_file_size"), "rotation.max_file_size"},
		{keyPath{}.key("streams").index(1).key("ack_wait"), "streams[1].ack_wait"},
		{keyPath{}.key("streams").index(2).key("subjects").index(3), "streams[2].subjects[3]"},
		{keyPath{}.key("a b").key("c.d").key(""), `"a b"."c.d".""`},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %s, want %s", got, tt.want)
		}
	}
}

// FuzzLocate checks that the locator finds every key and array element of
// any document the decoder accepts, on a line of the document.
func FuzzLocate(f *testing.F) {
	for _, src := range []string{
		"a = 1\n[b]\nc = [1, {d = 2}]\n[[e]]\nf.g = 'h'\n",
		"s = \"\"\"x\n\"\"\"\nt = { u = [ [1], [2, 3] ] }\n",
		"[a.b]\n[a]\n[[c]]\n[[c.d]]\n",
	} {
		f.Add(src)
	}
	seeds, _ := filepath.Glob("testdata/*.toml")
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, src string) {
		ix := locate(src) // must not panic on anything
		var doc map[string]any
		if _, err := toml.Decode(src, &doc); err != nil {
			return
		}
		lines := strings.Count(src, "\n") + 1
		var walk func(p keyPath, v any)
		walk = func(p keyPath, v any) {
			if len(p) > 0 {
				n, ok := ix.lines[p.String()]
				if !ok {
					t.Fatalf("%s not located in %q", p, src)
				}
				if n < 1 || n > lines {
					t.Fatalf("%s located on line %d of %d", p, n, lines)
				}
			}
			switch v := v.(type) {
			case map[string]any:
				for k, e := range v {
					walk(p.key(k), e)
				}
			case []map[string]any:
				for i, e := range v {
					walk(p.index(i+1), e)
				}
			case []any:
				for i, e := range v {
					walk(p.index(i+1), e)
				}
			}
		}
		walk(nil, doc)
	})
}
