package formats

import (
	"errors"
	"strconv"
	"time"
)

// Extractor reads the typed columns' values out of messages' JSON
// payloads, for what a message's place depends on: a path template's
// {column:<name>}, an event time, an Iceberg partition over a typed
// column. It reads them as the parquet encoder does: the same paths, the
// same conversions, the same type errors. An Extractor is not safe for
// concurrent use.
type Extractor struct {
	r       cellReader
	compact []byte
	vals    []Value
}

// Value is a typed column's value in one payload.
type Value struct {
	Type  ColumnType
	Null  bool    // missing, JSON null, a payload that is not JSON, or a type error the policy nulls
	Int   int64   // int64, int32, boolean (1 for true), timestamp (µs since the epoch), date (days since the epoch)
	Float float64 // double
	Bytes []byte  // string (unescaped) and json (compacted); valid until the next Extract
}

// NewExtractor returns an Extractor of cols. A value of the wrong type is
// a *TypeError from Extract when policy is RejectTypeErrors, and a null
// Value with NullTypeErrors.
func NewExtractor(cols []Column, policy TypeErrorPolicy) (*Extractor, error) {
	typed, err := compileColumns(cols)
	if err != nil {
		return nil, err
	}
	return &Extractor{r: newCellReader(typed, policy), vals: make([]Value, len(typed))}, nil
}

// Extract returns the values of the columns, in the order NewExtractor
// was given them, read from data. They are valid until the next call.
func (x *Extractor) Extract(data []byte) ([]Value, error) {
	isJSON := false
	if len(data) > 0 {
		x.compact, isJSON = appendCompactJSON(x.compact[:0], data)
	}
	cells, err := x.r.read(x.compact, isJSON)
	if err != nil {
		return nil, err
	}
	for i, c := range cells {
		x.vals[i] = Value{Type: x.r.typed[i].Type, Null: c.null, Int: c.i, Float: c.f, Bytes: c.b}
	}
	return x.vals, nil
}

// AppendText appends v as text: a string as it is, a number in its
// shortest form, true or false, a timestamp in RFC 3339 in UTC, a date as
// YYYY-MM-DD, JSON compacted. A null value appends nothing.
func (v Value) AppendText(dst []byte) []byte {
	if v.Null {
		return dst
	}
	switch v.Type {
	case TypeInt64, TypeInt32:
		return strconv.AppendInt(dst, v.Int, 10)
	case TypeDouble:
		return strconv.AppendFloat(dst, v.Float, 'g', -1, 64)
	case TypeBoolean:
		return strconv.AppendBool(dst, v.Int != 0)
	case TypeTimestamp:
		return time.UnixMicro(v.Int).UTC().AppendFormat(dst, time.RFC3339Nano)
	case TypeDate:
		return time.Unix(v.Int*86400, 0).UTC().AppendFormat(dst, time.DateOnly)
	}
	return append(dst, v.Bytes...)
}

// Time returns the instant a timestamp value holds, or midnight UTC of a
// date value's day. It reports false for a null value and other types.
func (v Value) Time() (time.Time, bool) {
	switch {
	case v.Null:
		return time.Time{}, false
	case v.Type == TypeTimestamp:
		return time.UnixMicro(v.Int).UTC(), true
	case v.Type == TypeDate:
		return time.Unix(v.Int*86400, 0).UTC(), true
	}
	return time.Time{}, false
}

// ErrNoTime is the error of TimeText.Parse for an empty string.
var ErrNoTime = errors.New("no time")

// TimeText reads a time from text, such as a header's value, as a
// timestamp column reads a string with Coerce: RFC 3339 with any offset,
// or an epoch number in its unit. The zero value takes RFC 3339 only.
type TimeText struct {
	c typedColumn
}

// NewTimeText returns the TimeText of epoch numbers in unit: "s", "ms",
// "us" or "ns"; with "" an epoch number is an error.
func NewTimeText(unit string) (TimeText, error) {
	typed, err := compileColumns([]Column{{Name: "time", Source: "time", Type: TypeTimestamp, Unit: unit, Coerce: true}})
	if err != nil {
		return TimeText{}, err
	}
	return TimeText{c: typed[0]}, nil
}

// Parse returns the time s holds, in UTC, cut to the microsecond.
func (t TimeText) Parse(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, ErrNoTime
	}
	c := t.c
	c.Type, c.Coerce = TypeTimestamp, true
	us, reason := c.convertTimestamp([]byte{'"'}, []byte(s))
	if reason != "" {
		return time.Time{}, errors.New(reason)
	}
	return time.UnixMicro(us).UTC(), nil
}
