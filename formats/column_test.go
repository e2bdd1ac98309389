package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// compactDoc returns the compact form of a JSON document, failing the test
// when it is not JSON.
func compactDoc(t testing.TB, doc string) []byte {
	t.Helper()
	c, ok := appendCompactJSON(nil, []byte(doc))
	if !ok {
		t.Fatalf("not JSON: %s", doc)
	}
	return c
}

func TestLookup(t *testing.T) {
	const doc = `{"user": {"id": 42, "name": "Ann", "tags": ["a", "b"], "x.y": 1},
		"items": [{"sku": "A-1", "qty": 2}, {"sku": "B-2"}],
		"map": {"0": "zero", "01": "zero-one"},
		"dup": 1, "dup": 2,
		"esc\u0061ped": "yes", "quote\"d": "q", "nested": [[1, [2, 3]], {}],
		"null": null, "empty": {}, "arr": [], "s": "str"}`
	tests := []struct {
		path string
		want string // "" means not found
	}{
		{"user", `{"id":42,"name":"Ann","tags":["a","b"],"x.y":1}`},
		{"user.id", `42`},
		{"user.name", `"Ann"`},
		{"user.tags.1", `"b"`},
		{"user.tags.2", ``},
		{"user.missing", ``},
		{"missing.id", ``},
		{"items.0.sku", `"A-1"`},
		{"items.1.sku", `"B-2"`},
		{"items.1.qty", ``},
		{"items.2.sku", ``},
		{"items.sku", ``},
		{"items.-1", ``},
		{"items.00", ``},
		{"items.+1", ``},
		{"items.99999999999", ``},
		{"map.0", `"zero"`},
		{"map.01", `"zero-one"`},
		{"dup", `2`},
		{"escaped", `"yes"`},
		{`quote"d`, `"q"`},
		{"nested.0.1.1", `3`},
		{"nested.1", `{}`},
		{"nested.1.a", ``},
		{"null", `null`},
		{"null.a", ``},
		{"empty.a", ``},
		{"arr.0", ``},
		{"s.0", ``},
		{"user.id.x", ``},
	}
	c := compactDoc(t, doc)
	for _, tt := range tests {
		path, ok := parsePath(tt.path)
		if !ok {
			t.Fatalf("parsePath(%q) failed", tt.path)
		}
		v, _, found := lookup(c, path, nil)
		if got := string(v); found != (tt.want != "") || got != tt.want {
			t.Errorf("lookup(%q) = %s, %v; want %s", tt.path, got, found, tt.want)
		}
	}
	for _, doc := range []string{`1`, `"s"`, `null`, `true`, `[]`, `{}`} {
		path, _ := parsePath("a")
		if v, _, found := lookup(compactDoc(t, doc), path, nil); found {
			t.Errorf("lookup(a) in %s = %s, want nothing", doc, v)
		}
	}
}

func TestParsePath(t *testing.T) {
	for _, bad := range []string{"", ".", "a.", ".a", "a..b"} {
		if _, ok := parsePath(bad); ok {
			t.Errorf("parsePath(%q) succeeded", bad)
		}
	}
	segs, ok := parsePath("items.0.sku.12.01")
	want := []pathSeg{{"items", -1}, {"0", 0}, {"sku", -1}, {"12", 12}, {"01", -1}}
	if !ok || !reflect.DeepEqual(segs, want) {
		t.Errorf("parsePath = %v, want %v", segs, want)
	}
}

// convertCase is one row of the conversion table: a column, a JSON value
// and the expected cell or error reason.
type convertCase struct {
	col    Column
	value  string
	want   any    // nil: null; int64, float64, string
	reason string // the start of the error reason, "" for none
}

func col(typ ColumnType, opts ...func(*Column)) Column {
	c := Column{Name: "c", Source: "v", Type: typ}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func coerce(c *Column) { c.Coerce = true }
func unit(u string) func(*Column) {
	return func(c *Column) { c.Unit = u }
}

func micros(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMicro()
}

func TestConvert(t *testing.T) {
	str, i64, i32, dbl, boo := col(TypeString), col(TypeInt64), col(TypeInt32), col(TypeDouble), col(TypeBoolean)
	ts, date, js := col(TypeTimestamp), col(TypeDate), col(TypeJSON)
	tests := []convertCase{
		// null is null for every type
		{str, `null`, nil, ""},
		{i64, `null`, nil, ""},
		{js, `null`, nil, ""},
		{ts, `null`, nil, ""},

		// string
		{str, `"abc"`, "abc", ""},
		{str, `""`, "", ""},
		{str, `"caf\u00e9 \"q\" \\ \/ \n\t"`, "café \"q\" \\ / \n\t", ""},
		{str, `"\ud83d\ude00"`, "😀", ""},
		{str, `"\ud800x"`, "\ufffdx", ""},
		{str, `"\udc00\ud800"`, "\ufffd\ufffd", ""},
		{str, `"日本"`, "日本", ""},
		{str, `42`, nil, "a number is not a string without coerce"},
		{str, `true`, nil, "a boolean is not a string without coerce"},
		{str, `{"a":1}`, nil, "an object is not a string; use type json"},
		{str, `[1]`, nil, "an array is not a string; use type json"},
		{col(TypeString, coerce), `42`, "42", ""},
		{col(TypeString, coerce), `1.50e3`, "1.50e3", ""},
		{col(TypeString, coerce), `false`, "false", ""},
		{col(TypeString, coerce), `[1]`, nil, "an array is not a string"},

		// int64
		{i64, `42`, int64(42), ""},
		{i64, `-7`, int64(-7), ""},
		{i64, `0`, int64(0), ""},
		{i64, `-0`, int64(0), ""},
		{i64, `4.0`, int64(4), ""},
		{i64, `1e3`, int64(1000), ""},
		{i64, `1.5e1`, int64(15), ""},
		{i64, `12300e-2`, int64(123), ""},
		{i64, `9223372036854775807`, int64(math.MaxInt64), ""},
		{i64, `-9223372036854775808`, int64(math.MinInt64), ""},
		{i64, `9223372036854775808`, nil, "overflows an int64"},
		{i64, `-9223372036854775809`, nil, "overflows an int64"},
		{i64, `1e19`, nil, "overflows an int64"},
		{i64, `1e400`, nil, "overflows an int64"},
		{i64, `123456789012345678901234567890`, nil, "overflows an int64"},
		{i64, `1.5`, nil, "is not an integer"},
		{i64, `-0.5`, nil, "is not an integer"},
		{i64, `1e-400`, nil, "is not an integer"},
		{i64, `0.0e5`, int64(0), ""},
		{i64, `"42"`, nil, "a string is not an int64 without coerce"},
		{i64, `true`, nil, "a boolean is not an int64"},
		{i64, `{}`, nil, "an object is not an int64"},
		{col(TypeInt64, coerce), `"42"`, int64(42), ""},
		{col(TypeInt64, coerce), `"-1e2"`, int64(-100), ""},
		{col(TypeInt64, coerce), `"1.5"`, nil, "is not an integer"},
		{col(TypeInt64, coerce), `" 42"`, nil, "a string that is not a JSON number is not an int64"},
		{col(TypeInt64, coerce), `"0x10"`, nil, "a string that is not a JSON number"},
		{col(TypeInt64, coerce), `""`, nil, "a string that is not a JSON number"},
		{col(TypeInt64, coerce), `"99999999999999999999"`, nil, "overflows an int64"},
		{col(TypeInt64, coerce), `true`, nil, "a boolean is not an int64"},

		// int32
		{i32, `2147483647`, int64(math.MaxInt32), ""},
		{i32, `-2147483648`, int64(math.MinInt32), ""},
		{i32, `2147483648`, nil, "overflows an int32"},
		{i32, `-2147483649`, nil, "overflows an int32"},
		{i32, `3.25`, nil, "is not an integer"},
		{col(TypeInt32, coerce), `"12"`, int64(12), ""},

		// double
		{dbl, `1.5`, 1.5, ""},
		{dbl, `-2`, -2.0, ""},
		{dbl, `1e308`, 1e308, ""},
		{dbl, `123456789012345678901234567890`, 1.2345678901234568e29, ""},
		{dbl, `1e400`, nil, "overflows a double"},
		{dbl, `-1e400`, nil, "overflows a double"},
		{dbl, `1e-400`, 0.0, ""},
		{dbl, `"1.5"`, nil, "a string is not a double without coerce"},
		{col(TypeDouble, coerce), `"1.5"`, 1.5, ""},
		{col(TypeDouble, coerce), `"NaN"`, nil, "a string that is not a JSON number"},

		// boolean
		{boo, `true`, int64(1), ""},
		{boo, `false`, int64(0), ""},
		{boo, `1`, nil, "a number is not a boolean"},
		{boo, `"true"`, nil, "a string is not a boolean without coerce"},
		{col(TypeBoolean, coerce), `"true"`, int64(1), ""},
		{col(TypeBoolean, coerce), `"false"`, int64(0), ""},
		{col(TypeBoolean, coerce), `"yes"`, nil, `a string other than "true" or "false"`},
		{col(TypeBoolean, coerce), `"TRUE"`, nil, `a string other than "true" or "false"`},
		{col(TypeBoolean, coerce), `0`, nil, "a number is not a boolean"},

		// timestamp from RFC 3339
		{ts, `"2026-11-29T07:00:00Z"`, micros("2026-11-29T07:00:00Z"), ""},
		{ts, `"2026-11-29T08:00:00.123456789+01:00"`, micros("2026-11-29T07:00:00.123456Z"), ""},
		{ts, `"2026-11-28T23:30:00.5-08:00"`, micros("2026-11-29T07:30:00.5Z"), ""},
		{ts, `"1969-12-31T23:59:59.9999999Z"`, int64(-1), ""},
		{ts, `"0001-01-01T00:00:00Z"`, micros("0001-01-01T00:00:00Z"), ""},
		{ts, `"2026-11-29"`, nil, "a string that is not an RFC 3339 timestamp"},
		{ts, `"2026-11-29 07:00:00Z"`, nil, "a string that is not an RFC 3339 timestamp"},
		{ts, `"yesterday"`, nil, "a string that is not an RFC 3339 timestamp"},
		{ts, `true`, nil, "a boolean is not a timestamp"},
		{ts, `{}`, nil, "an object is not a timestamp"},
		// timestamp from epoch numbers
		{ts, `1764399600`, nil, "an epoch number is not a timestamp without a unit"},
		{col(TypeTimestamp, unit("s")), `1764399600`, micros("2025-11-29T07:00:00Z"), ""},
		{col(TypeTimestamp, unit("s")), `1764399600.123456789`, micros("2025-11-29T07:00:00.123456Z"), ""},
		{col(TypeTimestamp, unit("s")), `1.7643996e9`, micros("2025-11-29T07:00:00Z"), ""},
		{col(TypeTimestamp, unit("s")), `-1.5`, int64(-1500000), ""},
		{col(TypeTimestamp, unit("s")), `-0.0000001`, int64(-1), ""},
		{col(TypeTimestamp, unit("ms")), `1764399600123`, micros("2025-11-29T07:00:00.123Z"), ""},
		{col(TypeTimestamp, unit("ms")), `1764399600123.5`, micros("2025-11-29T07:00:00.1235Z"), ""},
		{col(TypeTimestamp, unit("us")), `1764399600123456`, micros("2025-11-29T07:00:00.123456Z"), ""},
		{col(TypeTimestamp, unit("ns")), `1764399600123456789`, micros("2025-11-29T07:00:00.123456Z"), ""},
		{col(TypeTimestamp, unit("ns")), `-1`, int64(-1), ""},
		{col(TypeTimestamp, unit("s")), `9223372036855`, nil, "overflows a timestamp"},
		{col(TypeTimestamp, unit("s")), `1e400`, nil, "overflows a timestamp"},
		// years 1 to 9999 only: a key and Iceberg's hour() have no room
		// for more (hour() overflows an int32 past the year 245,000)
		{col(TypeTimestamp, unit("s")), `253402300799`, micros("9999-12-31T23:59:59Z"), ""},
		{col(TypeTimestamp, unit("s")), `253402300800`, nil, "a timestamp outside the years 0001 to 9999"},
		{col(TypeTimestamp, unit("s")), `-62135596800`, micros("0001-01-01T00:00:00Z"), ""},
		{col(TypeTimestamp, unit("s")), `-62135596800.000001`, nil, "a timestamp outside the years 0001 to 9999"},
		{col(TypeTimestamp, unit("ms")), `-100676332800000`, nil, "a timestamp outside the years 0001 to 9999"},
		{col(TypeTimestamp, unit("us")), `9223372036854775807`, nil, "a timestamp outside the years 0001 to 9999"},
		{ts, `"0000-12-31T23:59:59Z"`, nil, "a timestamp outside the years 0001 to 9999"},
		{ts, `"0001-01-01T00:30:00+01:00"`, nil, "a timestamp outside the years 0001 to 9999"},
		{col(TypeTimestamp, unit("ms")), `"1764399600123"`, nil, "a string that is not an RFC 3339 timestamp"},
		{col(TypeTimestamp, unit("ms"), coerce), `"1764399600123"`, micros("2025-11-29T07:00:00.123Z"), ""},
		{col(TypeTimestamp, unit("ms"), coerce), `"2026-11-29T07:00:00Z"`, micros("2026-11-29T07:00:00Z"), ""},
		{col(TypeTimestamp, coerce), `"1764399600123"`, nil, "an epoch number is not a timestamp without a unit"},

		// date
		{date, `"2026-11-29"`, int64(20786), ""},
		{date, `"1970-01-01"`, int64(0), ""},
		{date, `"1969-12-31"`, int64(-1), ""},
		{date, `"2026-11-29T23:30:00-05:00"`, int64(20787), ""},
		{date, `"2026-11-29T00:30:00+01:00"`, int64(20785), ""},
		{date, `"1969-12-31T23:59:59.999Z"`, int64(-1), ""},
		{date, `"2026-02-30"`, nil, "a string that is neither YYYY-MM-DD nor an RFC 3339 timestamp"},
		{date, `"2026-1-29"`, nil, "a string that is neither"},
		{date, `"29/11/2026"`, nil, "a string that is neither"},
		{date, `20786`, nil, "a number is not a date"},
		{col(TypeDate, coerce), `20786`, nil, "a number is not a date"},

		// json
		{js, `{"a":[1,{"b":"c"}]}`, `{"a":[1,{"b":"c"}]}`, ""},
		{js, `[]`, `[]`, ""},
		{js, `"s\u00e9"`, `"s\u00e9"`, ""},
		{js, `1.50`, `1.50`, ""},
		{js, `false`, `false`, ""},
	}
	for _, tt := range tests {
		name := string(tt.col.Type) + "/" + tt.value
		if tt.col.Coerce {
			name += "/coerce"
		}
		if tt.col.Unit != "" {
			name += "/" + tt.col.Unit
		}
		t.Run(name, func(t *testing.T) {
			cols, err := compileColumns([]Column{tt.col})
			if err != nil {
				t.Fatal(err)
			}
			x, _, reason := cols[0].convert([]byte(tt.value), nil)
			if tt.reason != "" {
				if !strings.HasPrefix(reason, tt.reason) {
					t.Fatalf("reason = %q, want it to start with %q", reason, tt.reason)
				}
				return
			}
			if reason != "" {
				t.Fatalf("unexpected reason %q", reason)
			}
			var got any
			switch {
			case x.null:
			case x.b != nil:
				got = string(x.b)
			case tt.col.Type == TypeDouble:
				got = x.f
			case tt.col.Type == TypeString || tt.col.Type == TypeJSON:
				got = ""
			default:
				got = x.i
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("value = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestDecimalToIntMatchesBigArithmetic(t *testing.T) {
	nums := []string{"0", "-0", "1", "-1", "12.5", "-12.5", "0.001", "-0.001", "1e2", "1E+2", "1e-2",
		"123456789.987654321", "-123456789.987654321", "9223372036854775807", "-9223372036854775808",
		"9223372036854775.807", "-9223372036854775.8089", "0.00000000000000000000012e22"}
	for _, num := range nums {
		for _, shift := range []int{-3, 0, 3, 6} {
			n, exact, ok := decimalToInt([]byte(num), shift)
			want, wantExact, wantOK := floorBig(num, shift)
			if n != want || exact != wantExact || ok != wantOK {
				t.Errorf("decimalToInt(%s, %d) = %d, %v, %v; want %d, %v, %v", num, shift, n, exact, ok, want, wantExact, wantOK)
			}
		}
	}
}

func TestTypeErrorsRejectTheRecordAndLeaveTheBatchAlone(t *testing.T) {
	opts := Options{Format: Parquet, Columns: []Column{
		{Name: "id", Source: "id", Type: TypeInt64},
		{Name: "name", Source: "user.name", Type: TypeString},
	}}
	good1, good2 := rec(`{"id":1,"user":{"name":"a"}}`), rec(`{"id":2}`)
	bad := rec(`{"id":3,"user":{"name":` + strings.Repeat("[1,", 40) + `2` + strings.Repeat("]", 40) + `}}`)
	want := encodeBody(t, opts, good1, good2)

	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	b := e.NewBatch()
	if err := b.Append(good1); err != nil {
		t.Fatal(err)
	}
	size, mem := b.Size(), b.MemSize()
	err = b.Append(bad)
	var te *TypeError
	if !errors.As(err, &te) {
		t.Fatalf("Append = %v, want a *TypeError", err)
	}
	wantErr := &TypeError{Column: "name", Source: "user.name", Value: strings.Repeat("[1,", 21) + "[...", Reason: "an array is not a string; use type json for it"}
	if *te != *wantErr {
		t.Fatalf("error = %#v, want %#v", te, wantErr)
	}
	if got := te.Error(); !strings.HasPrefix(got, `formats: column name (source user.name): value [1,[1,`) {
		t.Fatalf("Error() = %q", got)
	}
	if b.Len() != 1 || b.Size() != size || b.MemSize() != mem {
		t.Fatalf("after a rejected Append: Len %d, Size %d, MemSize %d; want 1, %d, %d", b.Len(), b.Size(), b.MemSize(), size, mem)
	}
	b.DropLast() // must not drop good1: the last Append failed
	if b.Len() != 1 {
		t.Fatalf("DropLast after a rejected Append dropped a record")
	}
	if err := b.Append(good2); err != nil {
		t.Fatal(err)
	}
	got, err := bytesOf(b.Finish())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("a batch that rejected a record differs from one that never saw it")
	}

	opts.OnTypeError = NullTypeErrors
	rows := readParquet(t, encodeBody(t, opts, good1, bad)).Rows
	if rows[1]["id"] != int64(3) || rows[1]["name"] != nil {
		t.Fatalf("with on_type_error = null the row is %v, want id 3 and a null name", rows[1])
	}
}

// floorBig is decimalToInt computed with math/big.
func floorBig(num string, shift int) (int64, bool, bool) {
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		panic(num)
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(shift, -shift))), nil))
	if shift >= 0 {
		r.Mul(r, scale)
	} else {
		r.Quo(r, scale)
	}
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // Euclidean: rounds down for a positive divisor
	if !q.IsInt64() {
		return 0, false, false
	}
	return q.Int64(), m.Sign() == 0, true
}

// encodeBody appends records to a new batch of opts and finishes it.
func encodeBody(t testing.TB, opts Options, records ...*Record) []byte {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b := e.NewBatch()
	for _, r := range records {
		if err := b.Append(r); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	body, err := bytesOf(b.Finish())
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return bytes.Clone(body)
}

// FuzzExtract checks that lookup never panics and finds what encoding/json
// finds at the same path, and that converting what it finds never panics.
func FuzzExtract(f *testing.F) {
	f.Add([]byte(`{"user":{"id":42,"tags":["a","b"]}}`), "user.tags.1")
	f.Add([]byte(`{"a":1,"a":{"b":[0,{"c":null}]}}`), "a.b.1.c")
	f.Add([]byte(`{"\u0061\ud800":{"0":[1]}}`), "a\ufffd.0.0")
	f.Add([]byte(`[[[]],{"x":"y"}]`), "1.x")
	f.Add([]byte(`{"items":[{"sku":"A-1"}]}`), "items.01.sku")
	f.Add([]byte(`{"t":"2026-11-29T07:00:00+01:00","n":1.5e300}`), "t")
	f.Fuzz(func(t *testing.T, data []byte, src string) {
		path, ok := parsePath(src)
		if !ok {
			return
		}
		doc, ok := appendCompactJSON(nil, data)
		if !ok {
			return
		}
		got, _, found := lookup(doc, path, nil)
		if doc[0] == '{' {
			// Append finds the first step of every path in one scan.
			firsts := make([][]byte, 2)
			members(doc, []string{path[0].name, "other"}, firsts, nil)
			first, _, ok := lookup(doc, path[:1], nil)
			if ok != (firsts[0] != nil) || !bytes.Equal(first, firsts[0]) {
				t.Fatalf("members finds %s for %q, lookup %s", firsts[0], path[0].name, first)
			}
		}

		var root any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&root); err != nil {
			t.Fatalf("encoding/json rejects what the compactor accepts: %v", err)
		}
		want, wantFound := walk(root, path)
		if found != wantFound {
			t.Fatalf("lookup(%q) found = %v (%s), encoding/json found = %v (%v)", src, found, got, wantFound, want)
		}
		if !found {
			return
		}
		var v any
		dec = json.NewDecoder(bytes.NewReader(got))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("lookup(%q) = %s, not JSON: %v", src, got, err)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("lookup(%q) = %s (%#v), encoding/json finds %#v", src, got, v, want)
		}
		for _, typ := range []ColumnType{TypeString, TypeInt64, TypeInt32, TypeDouble, TypeBoolean, TypeTimestamp, TypeDate, TypeJSON} {
			for _, c := range []Column{{Type: typ}, {Type: typ, Coerce: true}} {
				if typ == TypeTimestamp {
					c.Unit = "ms"
				}
				tc := typedColumn{Column: c, scale: 3}
				x, _, reason := tc.convert(got, nil)
				if typ == TypeString && reason == "" && !x.null && x.b != nil {
					if s, ok := v.(string); ok && s != string(x.b) {
						t.Fatalf("string %s converted to %q, encoding/json says %q", got, x.b, s)
					}
				}
			}
		}
	})
}

// walk follows path through a value decoded by encoding/json, with the
// rules lookup documents.
func walk(v any, path []pathSeg) (any, bool) {
	for _, seg := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg.name]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg.name)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != seg.name {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
