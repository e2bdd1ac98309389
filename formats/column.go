package formats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Column is a typed parquet column whose values come from a field of each
// message's JSON payload.
//
// Every typed column is optional: it is null when the payload is not JSON,
// when the path finds nothing (a member is missing, an index is out of
// range, a step meets a value that is not an object or array) and when the
// value is JSON null. A value of the wrong type is a type error, handled as
// Options.OnTypeError says.
//
// The conversions are strict unless Coerce is set:
//
//	type       JSON value accepted                      with Coerce, also
//	string     string (unescaped)                       number (its text as written), true, false
//	int64      integral number in int64 range:          string holding such a number: "42"
//	           42, -7, 4.0, 1e3 (not 1.5, not 2^63)
//	int32      integral number in int32 range           string holding such a number
//	double     number (rounded to nearest; 1e400 is an  string holding a number
//	           overflow error)
//	boolean    true, false                              "true", "false"
//	timestamp  RFC 3339 string, any offset, to UTC,     string holding an epoch number,
//	           sub-microsecond digits dropped;          with Unit
//	           number with Unit: seconds, ms, µs or ns
//	           since 1970-01-01T00:00:00Z, fractions
//	           allowed, rounded down to a microsecond
//	date       "YYYY-MM-DD" string; RFC 3339 string,    (nothing more)
//	           as the date in UTC
//	json       any value, as its compacted JSON text    (nothing more)
//
// Objects and arrays are type errors for every type but json. A timestamp
// column without Unit takes only strings: an epoch number is a type error,
// because guessing its unit silently writes dates centuries off. Overflow
// (an int64 beyond ±2^63, an int32 beyond ±2^31, a double beyond ±1.8e308,
// an epoch beyond year ±290,000) is a type error, never a wrapped value.
type Column struct {
	Name   string     // [a-z_][a-z0-9_]*, unique, not an envelope column
	Source string     // dotted path into the payload: "user.id", "items.0.sku"
	Type   ColumnType //
	Unit   string     // timestamp only: "s", "ms", "us" or "ns" for epoch numbers; empty takes only RFC 3339 strings
	Coerce bool       // also convert the values the table above lists
}

// ColumnType is the type of a typed parquet column.
type ColumnType string

// The types of typed columns, with their parquet types.
const (
	TypeString    ColumnType = "string"    // BYTE_ARRAY, STRING
	TypeInt64     ColumnType = "int64"     // INT64
	TypeInt32     ColumnType = "int32"     // INT32
	TypeDouble    ColumnType = "double"    // DOUBLE
	TypeBoolean   ColumnType = "boolean"   // BOOLEAN
	TypeTimestamp ColumnType = "timestamp" // INT64, TIMESTAMP(MICROS, isAdjustedToUTC=true)
	TypeDate      ColumnType = "date"      // INT32, DATE
	TypeJSON      ColumnType = "json"      // BYTE_ARRAY, STRING holding JSON text
)

// article returns the type with its indefinite article: "an int64".
func (t ColumnType) article() string {
	if t == TypeInt64 || t == TypeInt32 {
		return "an " + string(t)
	}
	return "a " + string(t)
}

// TypeError reports a payload value that a typed column cannot hold.
type TypeError struct {
	Column string // the column's name
	Source string // the column's source path
	Value  string // the value's JSON text, truncated to about 64 bytes
	Reason string // what is wrong with it
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("formats: column %s (source %s): value %s: %s", e.Column, e.Source, e.Value, e.Reason)
}

// maxErrorValue is how much of a value a TypeError quotes.
const maxErrorValue = 64

// truncateValue returns the start of v, cut at a character boundary.
func truncateValue(v []byte) string {
	if len(v) <= maxErrorValue {
		return string(v)
	}
	n := maxErrorValue
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return string(v[:n]) + "..."
}

// typedColumn is a Column ready to extract values.
type typedColumn struct {
	Column
	path  []pathSeg
	scale int // timestamp: the power of ten from Unit to microseconds
}

// compileColumns checks cols and prepares them.
func compileColumns(cols []Column) ([]typedColumn, error) {
	out := make([]typedColumn, 0, len(cols))
	seen := make(map[string]bool, len(cols))
	envelope := EnvelopeNames()
	for i, c := range cols {
		where := fmt.Sprintf("formats: column %d (%q)", i+1, c.Name)
		switch {
		case !columnName.MatchString(c.Name):
			return nil, fmt.Errorf("%s: a name must match [a-z_][a-z0-9_]*", where)
		case slices.Contains(envelope, c.Name):
			return nil, fmt.Errorf("%s: the name is taken by an envelope column", where)
		case seen[c.Name]:
			return nil, fmt.Errorf("%s: the name is used twice", where)
		}
		seen[c.Name] = true
		tc := typedColumn{Column: c}
		var ok bool
		if tc.path, ok = parsePath(c.Source); !ok {
			return nil, fmt.Errorf("%s: source %q is not a dotted path of non-empty names", where, c.Source)
		}
		switch c.Type {
		case TypeString, TypeInt64, TypeInt32, TypeDouble, TypeBoolean, TypeDate, TypeJSON:
			if c.Unit != "" {
				return nil, fmt.Errorf("%s: a unit is only for timestamp columns, not %s", where, c.Type)
			}
		case TypeTimestamp:
			switch c.Unit {
			case "", "us":
			case "s":
				tc.scale = 6
			case "ms":
				tc.scale = 3
			case "ns":
				tc.scale = -3
			default:
				return nil, fmt.Errorf("%s: unknown unit %q (want s, ms, us or ns)", where, c.Unit)
			}
		default:
			return nil, fmt.Errorf("%s: unknown type %q (want string, int64, int32, double, boolean, timestamp, date or json)", where, string(c.Type))
		}
		out = append(out, tc)
	}
	return out, nil
}

// cell is one extracted value: an integer (int64, int32, boolean,
// timestamp, date), a double, or bytes (string, json).
type cell struct {
	null bool
	i    int64
	f    float64
	b    []byte // may point into the payload or scratch space
}

// convert converts the JSON value v, compact and valid, for column c. A
// non-empty reason means v has the wrong type. scratch is space for
// unescaped strings; cell.b may point into it or into v.
func (c *typedColumn) convert(v []byte, scratch []byte) (cell, []byte, string) {
	var x cell
	switch v[0] {
	case 'n':
		x.null = true
		return x, scratch, ""
	case '{', '[':
		if c.Type == TypeJSON {
			x.b = v
			return x, scratch, ""
		}
		kind := "an object"
		if v[0] == '[' {
			kind = "an array"
		}
		return x, scratch, kind + " is not " + c.Type.article() + "; use type json for it"
	}
	isString := v[0] == '"'
	isBool := v[0] == 't' || v[0] == 'f'
	var str []byte // the contents of a string value
	if isString {
		scratch = appendUnquoted(scratch[:0], v[1:len(v)-1])
		str = scratch
	}
	switch c.Type {
	case TypeJSON:
		x.b = v
	case TypeString:
		switch {
		case isString:
			x.b = str
		case !c.Coerce:
			return x, scratch, kindOf(v) + " is not a string without coerce"
		default:
			x.b = v // a number as written, true or false
		}
	case TypeBoolean:
		switch {
		case isBool:
			x.i = boolInt(v[0] == 't')
		case isString && c.Coerce && (string(str) == "true" || string(str) == "false"):
			x.i = boolInt(str[0] == 't')
		case isString && c.Coerce:
			return x, scratch, `a string other than "true" or "false" is not a boolean`
		default:
			return x, scratch, kindOf(v) + " is not a boolean" + withoutCoerce(isString)
		}
	case TypeInt64, TypeInt32, TypeDouble:
		var reason string
		x, reason = c.convertNumber(v, str)
		return x, scratch, reason
	case TypeTimestamp:
		var reason string
		x.i, reason = c.convertTimestamp(v, str)
		return x, scratch, reason
	case TypeDate:
		var reason string
		x.i, reason = convertDate(v, str)
		return x, scratch, reason
	}
	return x, scratch, ""
}

// convertNumber converts v for an int64, int32 or double column: a number,
// or with Coerce a string whose contents str are one. A non-empty reason
// means v has the wrong type or is out of range.
func (c *typedColumn) convertNumber(v, str []byte) (x cell, reason string) {
	isString := v[0] == '"'
	num := v
	switch {
	case isNumberStart(v[0]):
	case isString && c.Coerce:
		if !isJSONNumber(str) {
			return x, "a string that is not a JSON number is not " + c.Type.article()
		}
		num = str
	default:
		return x, kindOf(v) + " is not " + c.Type.article() + withoutCoerce(isString)
	}
	if c.Type == TypeDouble {
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return x, "overflows a double"
		}
		x.f = f
		return x, ""
	}
	n, exact, ok := decimalToInt(num, 0)
	switch {
	case !ok:
		return x, "overflows an int64"
	case !exact:
		return x, "is not an integer"
	case c.Type == TypeInt32 && (n < math.MinInt32 || n > math.MaxInt32):
		return x, "overflows an int32"
	}
	x.i = n
	return x, ""
}

// The microseconds since the epoch of the first and the last instant of
// the years 1 to 9999, the timestamps a column takes: a path's {year} and
// {date} have four digits for the year, and Iceberg's hour() overflows an
// int32 past the year 245,000.
const (
	minTimestamp = -62135596800_000000
	maxTimestamp = 253402300799_999999
)

// outOfYears is the reason of a timestamp outside minTimestamp and
// maxTimestamp.
const outOfYears = "a timestamp outside the years 0001 to 9999"

// convertTimestamp converts v for a timestamp column to microseconds since
// the epoch: an RFC 3339 string, or with Unit an epoch number (with Coerce
// also a string whose contents str are one), within the years 1 to 9999 in
// UTC. A non-empty reason means v has the wrong type or is out of range.
func (c *typedColumn) convertTimestamp(v, str []byte) (int64, string) {
	var epoch []byte
	switch {
	case v[0] == '"':
		if t, err := time.Parse(time.RFC3339, string(str)); err == nil {
			if us := t.UnixMicro(); us < minTimestamp || us > maxTimestamp {
				return 0, outOfYears
			}
			return t.UnixMicro(), ""
		}
		if !c.Coerce || !isJSONNumber(str) {
			return 0, "a string that is not an RFC 3339 timestamp is not a timestamp"
		}
		epoch = str
	case isNumberStart(v[0]):
		epoch = v
	default:
		return 0, kindOf(v) + " is not a timestamp"
	}
	if c.Unit == "" {
		return 0, "an epoch number is not a timestamp without a unit (set unit to s, ms, us or ns)"
	}
	n, _, ok := decimalToInt(epoch, c.scale)
	if !ok {
		return 0, "overflows a timestamp"
	}
	if n < minTimestamp || n > maxTimestamp {
		return 0, outOfYears
	}
	return n, ""
}

// convertDate converts v for a date column to days since the epoch: a
// string whose contents str are YYYY-MM-DD or an RFC 3339 timestamp, taken
// as the date in UTC. A non-empty reason means v has the wrong type.
func convertDate(v, str []byte) (int64, string) {
	if v[0] != '"' {
		return 0, kindOf(v) + " is not a date"
	}
	var t time.Time
	var err error
	if len(str) == len(time.DateOnly) {
		t, err = time.Parse(time.DateOnly, string(str))
	} else {
		t, err = time.Parse(time.RFC3339, string(str))
	}
	if err != nil {
		return 0, "a string that is neither YYYY-MM-DD nor an RFC 3339 timestamp is not a date"
	}
	return floorDiv(t.Unix(), 86400), ""
}

// isNumberStart reports whether a JSON value that starts with c is a
// number.
func isNumberStart(c byte) bool {
	return c == '-' || '0' <= c && c <= '9'
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func withoutCoerce(isString bool) string {
	if isString {
		return " without coerce"
	}
	return ""
}

// kindOf names the kind of the JSON value v.
func kindOf(v []byte) string {
	switch v[0] {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "null"
	}
	return "a number"
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// isJSONNumber reports whether s is exactly one JSON number.
func isJSONNumber(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	_, end, ok := compactNumber(nil, s, 0)
	return ok && end == len(s)
}

// decimalToInt returns the JSON number num times 10^shift, rounded down to
// an integer, whether no digit was dropped, and false when the result does
// not fit an int64. It is exact: no floating point is involved.
func decimalToInt(num []byte, shift int) (n int64, exact, ok bool) {
	neg, mant, frac, exp := splitDecimal(num)
	// The digits without the point, and the power of ten they are scaled
	// by.
	exp += shift - len(frac)

	// Walk the significant digits: mant then frac.
	digit := func(k int) byte {
		if k < len(mant) {
			return mant[k]
		}
		return frac[k-len(mant)]
	}
	total := len(mant) + len(frac)
	start := 0
	for start < total && digit(start) == '0' {
		start++
	}
	if start == total {
		return 0, true, true
	}
	// The integer part is digits [start, intEnd) followed by exp zeros when
	// exp > 0; digits from intEnd on are the dropped fraction.
	intEnd := total + min(exp, 0)
	exact = true
	for k := max(intEnd, start); k < total; k++ {
		if digit(k) != '0' {
			exact = false
			break
		}
	}
	var u uint64
	const limit = 1 << 63 // the magnitude of MinInt64
	for k := start; k < intEnd; k++ {
		d := uint64(digit(k) - '0')
		if u > (limit-d)/10 {
			return 0, false, false
		}
		u = u*10 + d
	}
	for range max(exp, 0) {
		if u > limit/10 {
			return 0, false, false
		}
		u *= 10
	}
	if !exact && neg {
		u++ // round down, away from zero
	}
	switch {
	case neg && u <= limit:
		return -int64(u-1) - 1, exact, true
	case !neg && u < limit:
		return int64(u), exact, true
	}
	return 0, false, false
}

// splitDecimal splits the JSON number num into its sign, the digits before
// the point (mant), the digits after it (frac) and its exponent, clamped to
// ±1e6: beyond that the value is 0 or overflows, whatever the digits, and
// the clamp keeps the arithmetic in range.
func splitDecimal(num []byte) (neg bool, mant, frac []byte, exp int) {
	neg = num[0] == '-'
	if neg {
		num = num[1:]
	}
	i := 0
	for i < len(num) && '0' <= num[i] && num[i] <= '9' {
		i++
	}
	mant = num[:i]
	if i < len(num) && num[i] == '.' {
		j := i + 1
		for j < len(num) && '0' <= num[j] && num[j] <= '9' {
			j++
		}
		frac = num[i+1 : j]
		i = j
	}
	if i < len(num) {
		e, err := strconv.Atoi(string(num[i+1:]))
		if err != nil || e > 1e6 {
			e = 1e6
			if num[i+1] == '-' {
				e = -1e6
			}
		} else if e < -1e6 {
			e = -1e6
		}
		exp = e
	}
	return neg, mant, frac, exp
}
