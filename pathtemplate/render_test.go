package pathtemplate_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/pathtemplate"
)

func TestDir(t *testing.T) {
	// 00:30 on New Year's Day in CET is 23:30 on New Year's Eve in UTC, so
	// every date part differs between the two zones.
	cet := time.Date(2026, 1, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600))
	// 19:05 on the 3rd in UTC-7 is 02:05 on the 4th in UTC; every part is
	// below 10 and needs its zero.
	padded := time.Date(2026, 3, 3, 19, 5, 59, 999999999, time.FixedZone("MST", -7*3600))
	v := &pathtemplate.Values{Stream: "ORDERS", Subject: "orders.eu.created", Consumer: "exporter", Time: cet}
	p := &pathtemplate.Values{Stream: "ORDERS", Subject: "orders.eu.created", Consumer: "exporter", Time: padded}
	tests := []struct {
		src  string
		v    *pathtemplate.Values
		want string
	}{
		{"", v, ""},
		{"raw", v, "raw"},
		{"{stream}", v, "ORDERS"},
		{"{subject}", v, "orders.eu.created"},
		{"{consumer}", v, "exporter"},
		{"{subject:1}", v, "orders"},
		{"{subject:2}", v, "eu"},
		{"{subject:3}", v, "created"},
		{"{subject:4}", v, "%00"},
		{"{subject:64}", v, "%00"},

		{"{date}", v, "2025-12-31"},
		{"{year}", v, "2025"},
		{"{month}", v, "12"},
		{"{day}", v, "31"},
		{"{hour}", v, "23"},
		{"{minute}", v, "30"},
		{"{year}/{month}/{day}/{hour}/{minute}", v, "2025/12/31/23/30"},

		{"{date}", p, "2026-03-04"},
		{"{year}-{month}-{day}T{hour}:{minute}", p, "2026-03-04T02:05"},
		{"{date}", &pathtemplate.Values{Time: time.Date(999, 1, 2, 0, 0, 0, 0, time.UTC)}, "0999-01-02"},
		{"{year}", &pathtemplate.Values{Time: time.Date(7, 1, 2, 0, 0, 0, 0, time.UTC)}, "0007"},
		{"{year}", &pathtemplate.Values{Time: time.Date(12345, 1, 2, 0, 0, 0, 0, time.UTC)}, "9999"}, // past MaxYear
		{"{hour}{minute}", &pathtemplate.Values{Time: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}, "0000"},
		{"{date}", &pathtemplate.Values{}, "0001-01-01"},

		{"{stream}/{subject}/{date}/{hour}", v, "ORDERS/orders.eu.created/2025-12-31/23"},
		{"{stream}/date={date}/hour={hour}", v, "ORDERS/date=2025-12-31/hour=23"},
		{"{stream}/{subject:1}/{subject:2}", v, "ORDERS/orders/eu"},
		{"tbl/{stream}.{consumer}", v, "tbl/ORDERS.exporter"},

		{"{stream}/{subject}/{consumer}", &pathtemplate.Values{}, "%00/%00/%00"},
		{"{stream}/{subject}", &pathtemplate.Values{Stream: ".", Subject: ".."}, "%2E/%2E%2E"},
		{"{subject}", &pathtemplate.Values{Subject: "a b/c"}, "a%20b%2Fc"},
		{"{subject}", &pathtemplate.Values{Subject: "orders.*.>"}, "orders.%2A.%3E"},
		{"{subject:1}/{subject:2}/{subject:3}", &pathtemplate.Values{Subject: "a..c"}, "a/%00/c"},
		{"{subject:1}/{subject:2}", &pathtemplate.Values{Subject: "..."}, "%00/%00"},
		{"{subject:2}", &pathtemplate.Values{Subject: "a.b/c.d"}, "b%2Fc"},
		{"{subject:1}", &pathtemplate.Values{Subject: "日本.x"}, "%E6%97%A5%E6%9C%AC"},
	}
	for _, tt := range tests {
		tpl := pathtemplate.MustParse(tt.src)
		if got := tpl.Dir(tt.v); got != tt.want {
			t.Errorf("%q.Dir(%+v) = %q, want %q", tt.src, *tt.v, got, tt.want)
		}
	}
}

func TestAppendDirAppends(t *testing.T) {
	tpl := pathtemplate.MustParse("{stream}/{hour}")
	v := &pathtemplate.Values{Stream: "S", Time: time.Date(2026, 1, 1, 7, 0, 0, 0, time.UTC)}
	buf := append(make([]byte, 0, 64), "raw/"...)
	got := tpl.AppendDir(buf, v)
	if string(got) != "raw/S/07" {
		t.Errorf("AppendDir = %q, want %q", got, "raw/S/07")
	}
	if &got[0] != &buf[0] {
		t.Error("AppendDir reallocated a buffer that had room")
	}
}

func TestZeroTemplateRendersNothing(t *testing.T) {
	var tpl pathtemplate.Template
	if got := tpl.Dir(&pathtemplate.Values{Stream: "S"}); got != "" {
		t.Errorf("zero Template rendered %q", got)
	}
	if tpl.UsesSubject() || tpl.String() != "" {
		t.Error("zero Template is not empty")
	}
}

func TestAppendDirDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tpl := pathtemplate.MustParse("{stream}/{subject}/{subject:2}/{consumer}/date={date}/{year}{month}{day}{hour}{minute}")
	v := &pathtemplate.Values{Stream: "ORDERS", Subject: "orders.eu.créé", Consumer: "c", Time: time.Now()}
	buf := make([]byte, 0, 512)
	// One run of 1000 calls, so that n is the exact total: AllocsPerRun
	// truncates its average to an integer.
	if n := testing.AllocsPerRun(1, func() {
		for range 1000 {
			buf = tpl.AppendDir(buf[:0], v)
		}
	}); n != 0 {
		t.Errorf("1000 AppendDir calls made %v allocations, want 0", n)
	}
}

func TestAppendEscaped(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"abcxyzABCXYZ0189._-", "abcxyzABCXYZ0189._-"},
		{"orders.eu.created", "orders.eu.created"},
		{"a/b", "a%2Fb"},
		{"/", "%2F"},
		{"100%", "100%25"},
		{"%2F", "%252F"},
		{"a b", "a%20b"},
		{"*", "%2A"},
		{">", "%3E"},
		{"orders.*.>", "orders.%2A.%3E"},
		{"~", "%7E"},
		{`\`, "%5C"},
		{"=+:,;@&$!'()[]{}#?\"<>|^`", "%3D%2B%3A%2C%3B%40%26%24%21%27%28%29%5B%5D%7B%7D%23%3F%22%3C%3E%7C%5E%60"},
		{"é", "%C3%A9"},
		{"日本", "%E6%97%A5%E6%9C%AC"},
		{"\U0001F600", "%F0%9F%98%80"},
		{"\xff\xfe", "%FF%FE"},
		{"\t\n\x7f", "%09%0A%7F"},
		{"", "%00"},
		{".", "%2E"},
		{"..", "%2E%2E"},
		{"...", "..."},
		{".a", ".a"},
		{"a.", "a."},
		{"..a", "..a"},
		// NUL can not occur in a NATS subject or name; it shares "%00"
		// with the empty value.
		{"\x00", "%00"},
		{"a\x00", "a%00"},
	}
	for _, tt := range tests {
		got := pathtemplate.AppendEscaped(nil, tt.in)
		if string(got) != tt.want {
			t.Errorf("AppendEscaped(%q) = %q, want %q", tt.in, got, tt.want)
		}
		checkEscaped(t, tt.in, string(got))
		if got := pathtemplate.AppendEscaped([]byte("x/"), tt.in); string(got) != "x/"+tt.want {
			t.Errorf("AppendEscaped(\"x/\", %q) = %q, want %q", tt.in, got, "x/"+tt.want)
		}
	}
}

func TestAppendEscapedShortensLongValues(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		prefix int // length of the kept escaped prefix; -1 when not shortened
	}{
		{"128 kept bytes fit", strings.Repeat("a", 128), -1},
		{"129 kept bytes are cut", strings.Repeat("a", 129), 111},
		{"a long value is cut to the same length", strings.Repeat("a", 10000), 111},
		{"42 escapes fit in 126 bytes", strings.Repeat("/", 42), -1},
		{"43 escapes are cut between escapes", strings.Repeat("/", 43), 111},
		{"an escape that would lose 2 digits is dropped", "ab" + strings.Repeat("/", 50), 110},
		{"an escape that would lose 1 digit is dropped", "a" + strings.Repeat("/", 50), 109},
		{"escaped UTF-8 is cut between bytes", strings.Repeat("é", 30), 111},
		{"escaped UTF-8 after one kept byte", "x" + strings.Repeat("é", 30), 109},
		{"kept bytes after escapes are cut anywhere", strings.Repeat("%", 36) + "abcdefghijklmnopqrstuvwxyz", 111},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(pathtemplate.AppendEscaped(nil, tt.in))
			checkEscaped(t, tt.in, got)
			if tt.prefix < 0 {
				if strings.Contains(got, "~") {
					t.Errorf("AppendEscaped shortened %d bytes to %q", len(tt.in), got)
				}
				return
			}
			if want := tt.prefix + 17; len(got) != want {
				t.Errorf("AppendEscaped(%d bytes) = %q (%d bytes), want %d bytes", len(tt.in), got, len(got), want)
			}
			if i := strings.IndexByte(got, '~'); i != tt.prefix {
				t.Errorf("AppendEscaped(%d bytes) = %q, want '~' at %d", len(tt.in), got, tt.prefix)
			}
		})
	}
}

func TestAppendEscapedShortensDistinctValuesDistinctly(t *testing.T) {
	long := strings.Repeat("x", 200)
	seen := map[string]string{}
	for _, in := range []string{long, long + "a", long + "b", "a" + long, long[:129], long[:130]} {
		got := string(pathtemplate.AppendEscaped(nil, in))
		if prev, ok := seen[got]; ok {
			t.Errorf("AppendEscaped gives %q for %d and %d bytes", got, len(prev), len(in))
		}
		seen[got] = in
	}
}

func TestAppendEscapedIsInjective(t *testing.T) {
	values := []string{
		"", ".", "..", "...", "%", "%25", "%2E", "%2E%2E", "%00", "~", "%7E", "a", "A", "a.b", "a/b", "a%2Fb",
		"é", "%C3%A9", "e\u0301", "\xc3", "*", ">", " ", "+", "_", "-",
		strings.Repeat("a", 128), strings.Repeat("a", 129), strings.Repeat("a", 111) + "~",
	}
	seen := map[string]string{}
	for _, in := range values {
		got := string(pathtemplate.AppendEscaped(nil, in))
		if prev, ok := seen[got]; ok {
			t.Errorf("AppendEscaped(%q) = AppendEscaped(%q) = %q", in, prev, got)
		}
		seen[got] = in
	}
}

// checkEscaped checks got = AppendEscaped(nil, in) against the rules in
// MaxValueLen and AppendEscaped: a value that fits is escaped whole; a value
// that does not is cut between escapes, before "~" and the value's FNV-1a
// hash.
func checkEscaped(t *testing.T, in, got string) {
	t.Helper()
	full := escapeAll(in)
	if len(got) > pathtemplate.MaxValueLen {
		t.Errorf("AppendEscaped(%q) = %q, %d bytes, longer than MaxValueLen", in, got, len(got))
	}
	if len(full) <= pathtemplate.MaxValueLen {
		if got != full {
			t.Errorf("AppendEscaped(%q) = %q, want %q", in, got, full)
		}
		return
	}
	kept, hash, ok := strings.Cut(got, "~")
	if !ok {
		t.Fatalf("AppendEscaped(%q) = %q, not shortened", in, got)
	}
	if !strings.HasPrefix(full, kept) || len(kept) < pathtemplate.MaxValueLen-17-2 {
		t.Errorf("AppendEscaped(%q) kept %q, want 109 to 111 bytes of %q", in, kept, full)
	}
	if i := strings.LastIndexByte(kept, '%'); i >= 0 && i > len(kept)-3 {
		t.Errorf("AppendEscaped(%q) = %q splits an escape", in, got)
	}
	h := fnv.New64a()
	h.Write([]byte(in))
	if want := fmt.Sprintf("%016X", h.Sum64()); hash != want {
		t.Errorf("AppendEscaped(%q) ends in hash %q, want %q", in, hash, want)
	}
}

// escapeAll is AppendEscaped without shortening, written independently.
func escapeAll(in string) string {
	switch in {
	case "":
		return "%00"
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	var b strings.Builder
	for _, c := range []byte(in) {
		if strings.IndexByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func TestAppendSeq(t *testing.T) {
	tests := []struct {
		seq  uint64
		want string
	}{
		{0, "00000000000000000000"},
		{1, "00000000000000000001"},
		{42, "00000000000000000042"},
		{1234567890, "00000000001234567890"},
		{math.MaxUint64, "18446744073709551615"},
	}
	for _, tt := range tests {
		if got := pathtemplate.AppendSeq([]byte("x"), tt.seq); string(got) != "x"+tt.want {
			t.Errorf("AppendSeq(x, %d) = %q, want %q", tt.seq, got, "x"+tt.want)
		}
	}
}

func TestAppendKeyAndKey(t *testing.T) {
	tests := []struct {
		prefix, dir string
		first, last uint64
		ext, want   string
	}{
		{"raw", "ORDERS/2026-01-01", 1, 500, "jsonl",
			"raw/ORDERS/2026-01-01/00000000000000000001-00000000000000000500.jsonl"},
		{"data/raw", "ORDERS", 7, 7, "json",
			"data/raw/ORDERS/00000000000000000007-00000000000000000007.json"},
		{"", "ORDERS/2026-01-01", 1, 500, "jsonl",
			"ORDERS/2026-01-01/00000000000000000001-00000000000000000500.jsonl"},
		{"raw", "", 1, 500, "jsonl",
			"raw/00000000000000000001-00000000000000000500.jsonl"},
		{"", "", 0, math.MaxUint64, "jsonl",
			"00000000000000000000-18446744073709551615.jsonl"},
		{"raw", "d", 1, 2, "",
			"raw/d/00000000000000000001-00000000000000000002"},
		{"raw", "d", 1, 2, "lost.json",
			"raw/d/00000000000000000001-00000000000000000002.lost.json"},
	}
	for _, tt := range tests {
		if got := pathtemplate.AppendKey([]byte("k:"), tt.prefix, []byte(tt.dir), tt.first, tt.last, tt.ext); string(got) != "k:"+tt.want {
			t.Errorf("AppendKey(%q, %q, %d, %d, %q) = %q, want %q", tt.prefix, tt.dir, tt.first, tt.last, tt.ext, got, "k:"+tt.want)
		}
		got, err := pathtemplate.Key(tt.prefix, tt.dir, tt.first, tt.last, tt.ext)
		if err != nil || got != tt.want {
			t.Errorf("Key(%q, %q, %d, %d, %q) = %q, %v; want %q", tt.prefix, tt.dir, tt.first, tt.last, tt.ext, got, err, tt.want)
		}
	}
}

func TestKeyRejectsKeysOver1024Bytes(t *testing.T) {
	// "p/" + dir + "/" + 41 bytes of sequences + ".jsonl" is dir + 50 bytes.
	dir := strings.Repeat("d", pathtemplate.MaxKeyLen-50)
	key, err := pathtemplate.Key("p", dir, 1, 2, "jsonl")
	if err != nil || len(key) != pathtemplate.MaxKeyLen {
		t.Errorf("Key of %d bytes = %d bytes, %v; want it accepted", pathtemplate.MaxKeyLen, len(key), err)
	}
	key, err = pathtemplate.Key("p", dir+"d", 1, 2, "jsonl")
	if !errors.Is(err, pathtemplate.ErrKeyTooLong) || key != "" {
		t.Errorf("Key of %d bytes = %q, %v; want ErrKeyTooLong", pathtemplate.MaxKeyLen+1, key, err)
	}
	if want := "pathtemplate: object key longer than 1024 bytes"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	// Bytes count, not runes: this key has 550 runes in 1050 bytes.
	if _, err := pathtemplate.Key("p", strings.Repeat("é", 500), 1, 2, "jsonl"); !errors.Is(err, pathtemplate.ErrKeyTooLong) {
		t.Errorf("Key of 550 runes in 1050 bytes: %v, want ErrKeyTooLong", err)
	}
}
