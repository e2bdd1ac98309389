// Package pathtemplate names every object jetlake writes, and nothing else
// does. It renders the directory part of data object keys from a template
// such as "{stream}/{subject}/{date}/{hour}"; the object names, which carry
// the stream sequence range an object holds (AppendKey, AppendCompactedKey),
// and parses them back (ParseName); and the keys of jetlake's own objects
// under "<prefix>/_jetlake/": loss markers, rejected messages and probes
// (LostKey, AppendRejectedDir, ProbeKey). Releases that were written keep
// being read, so these forms never change.
//
// Rendering is a pure function of the template, the stream, subject and
// consumer names, the message's time (its event time when the connector
// takes one from the content) and the values of its typed columns and
// headers: it does no I/O and reads no clock.
// Substituted values keep the bytes [A-Za-z0-9._-] and percent-encode every
// other byte as %XX, the way Hive encodes partition values, so two distinct
// subjects never render to the same directory. A value that is empty, "." or
// ".." is encoded as well, so a rendered key never contains "//" or a relative
// segment, and a value longer than MaxValueLen is shortened with a hash so
// keys stay within S3's 1024-byte limit. A value that starts a segment and
// begins with "_jetlake" has its leading "_" written as "%5F", so that no
// publisher's value can name a folder of jetlake's own (OwnDir); "%" is
// always escaped, so the escaping stays injective.
//
// The time variables render the years 1 to 9999, the four digits {year}
// and {date} are budgeted: a time outside them (in the template's zone)
// renders as the first or the last minute of that range. Callers take a
// time outside it for no time at all (InRange) before it gets here.
package pathtemplate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Var names a template variable.
type Var int

// The template variables.
const (
	VarLiteral Var = iota // literal text, kept as written
	VarStream
	VarSubject
	VarSubjectToken // {subject:N}
	VarConsumer
	VarDate
	VarYear
	VarMonth
	VarDay
	VarHour
	VarMinute
	VarColumn // {column:<name>}: a typed column's value
	VarHeader // {header:<Name>}: a header's first value
)

var varNames = map[string]Var{
	"stream":   VarStream,
	"subject":  VarSubject,
	"consumer": VarConsumer,
	"date":     VarDate,
	"year":     VarYear,
	"month":    VarMonth,
	"day":      VarDay,
	"hour":     VarHour,
	"minute":   VarMinute,
}

// Names lists the variables a template may use, for error messages.
const Names = "{stream}, {subject}, {subject:N}, {consumer}, {date}, {year}, {month}, {day}, {hour}, {minute}, {column:<name>}, {header:<Name>}"

// MissingValue is what {column:<name>} and {header:<Name>} render when the
// message has no value for them: a missing member, JSON null, a payload
// that is not JSON, a header not set. Hive, Athena and Trino read a folder
// of this name as a null partition value. A present value equal to it
// renders the same; a partition key that can hold it can not be told from
// a missing one, as in Hive.
const MissingValue = "__HIVE_DEFAULT_PARTITION__"

// MaxKeyLen is the longest object key S3 accepts, in bytes.
const MaxKeyLen = 1024

// Part is one piece of a parsed template.
type Part struct {
	Var   Var
	Text  string // literal text for VarLiteral; the name for VarColumn and VarHeader
	Token int    // 1-based token index for VarSubjectToken
}

// Template is a parsed path template. The zero value renders an empty
// directory. A Template is immutable and safe for concurrent use.
type Template struct {
	src   string
	parts []Part
}

// SyntaxError reports a malformed template.
type SyntaxError struct {
	Offset int // byte offset in the template
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("pathtemplate: at byte %d: %s", e.Offset, e.Msg)
}

// Parse parses a template. Literal text may not contain "{" or "}" outside
// of a variable, may not start or end with "/", and may not contain empty,
// "." or ".." segments. The returned error is a *SyntaxError.
func Parse(src string) (*Template, error) {
	t := &Template{src: src}
	if src == "" {
		return t, nil
	}
	if strings.HasPrefix(src, "/") {
		return nil, &SyntaxError{Offset: 0, Msg: "must not start or end with '/'"}
	}
	if strings.HasSuffix(src, "/") {
		return nil, &SyntaxError{Offset: len(src) - 1, Msg: "must not start or end with '/'"}
	}
	parts, err := scan(src)
	if err != nil {
		return nil, err
	}
	t.parts = parts
	if err := checkSegments(src); err != nil {
		return nil, err
	}
	return t, nil
}

// scan splits src into literal text and variables. Its error is a
// *SyntaxError.
func scan(src string) ([]Part, error) {
	var s scanner
	for i := 0; i < len(src); {
		c := src[i]
		switch c {
		case '}':
			return nil, s.stop(i, "unmatched '}'")
		case '{':
			end := strings.IndexByte(src[i:], '}')
			if end < 0 {
				return nil, s.stop(i, "unterminated '{'")
			}
			s.variable(i, src[i+1:i+end])
			i += end + 1
		default:
			if c < 0x20 || c == 0x7f || c == '\\' {
				return nil, s.stop(i, fmt.Sprintf("byte %q is not allowed in literal text", c))
			}
			s.lit.WriteByte(c)
			i++
		}
	}
	s.flush()
	if s.bad != nil {
		return nil, s.badVars()
	}
	return s.parts, nil
}

// scanner holds what scan has found so far: the parts, the literal text
// not yet made a part, and the bad variables. Every bad variable is
// reported, not only the first, so that one round of fixes is enough.
type scanner struct {
	parts   []Part
	lit     strings.Builder
	bad     *SyntaxError // the first bad variable, with the others' messages
	unknown bool         // a bad variable is no variable at all
}

// flush makes the pending literal text a part, if there is any.
func (s *scanner) flush() {
	if s.lit.Len() > 0 {
		s.parts = append(s.parts, Part{Var: VarLiteral, Text: s.lit.String()})
		s.lit.Reset()
	}
}

// variable adds the variable name found at byte off, and records it if it
// is bad.
func (s *scanner) variable(off int, name string) {
	p, msg, isUnknown := parseVar(name)
	switch {
	case msg == "":
	case s.bad == nil:
		s.bad = &SyntaxError{Offset: off, Msg: msg}
	default:
		s.bad.Msg += fmt.Sprintf("; at byte %d: %s", off, msg)
	}
	s.unknown = s.unknown || isUnknown
	s.flush()
	s.parts = append(s.parts, p)
}

// badVars returns the error of the bad variables, with the list of
// allowed names when one was unknown. It is called once, when bad is set.
func (s *scanner) badVars() *SyntaxError {
	if s.unknown {
		s.bad.Msg += "; allowed: " + Names
	}
	return s.bad
}

// stop returns the error of a structural error at byte off, which ends the
// scan; a bad variable before it is the first thing to fix, so it is
// returned instead.
func (s *scanner) stop(off int, msg string) *SyntaxError {
	if s.bad != nil {
		return s.badVars()
	}
	return &SyntaxError{Offset: off, Msg: msg}
}

// checkSegments rejects a template with an empty, "." or ".." path
// segment. Its error is a *SyntaxError.
func checkSegments(src string) error {
	off := 0 // offset of seg in src
	for _, seg := range strings.Split(src, "/") {
		switch seg {
		case "":
			return &SyntaxError{Offset: off - 1, Msg: "empty path segment ('//')"}
		case ".", "..":
			return &SyntaxError{Offset: off, Msg: fmt.Sprintf("path segment %q is not allowed", seg)}
		}
		off += len(seg) + 1
	}
	return nil
}

// parseVar parses the name between braces. On failure msg says why, and
// unknown says the name is no variable at all (the message then wants the
// list of allowed names).
func parseVar(name string) (p Part, msg string, unknown bool) {
	if v, ok := varNames[name]; ok {
		return Part{Var: v}, "", false
	}
	if rest, ok := strings.CutPrefix(name, "subject:"); ok {
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > 64 {
			return Part{}, fmt.Sprintf("{subject:N} needs N between 1 and 64, got %q", rest), false
		}
		return Part{Var: VarSubjectToken, Token: n}, "", false
	}
	if rest, ok := strings.CutPrefix(name, "column:"); ok {
		if !isColumnName(rest) {
			return Part{}, fmt.Sprintf("{column:<name>} needs the name of a typed column ([a-z_][a-z0-9_]*), got %q", rest), false
		}
		return Part{Var: VarColumn, Text: rest}, "", false
	}
	if rest, ok := strings.CutPrefix(name, "header:"); ok {
		if !isHeaderName(rest) {
			return Part{}, fmt.Sprintf("{header:<Name>} needs a header name (printable ASCII, no space or ':'), got %q", rest), false
		}
		return Part{Var: VarHeader, Text: rest}, "", false
	}
	return Part{}, fmt.Sprintf("unknown variable {%s}", name), true
}

// isColumnName reports whether s is a typed column's name:
// [a-z_][a-z0-9_]*.
func isColumnName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isHeaderName reports whether s can name a NATS header: printable ASCII
// without space or ':'.
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == ':' {
			return false
		}
	}
	return true
}

// MustParse is like Parse but panics on error. It is meant for tests and
// package-level variables.
func MustParse(src string) *Template {
	t, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return t
}

// String returns the template source.
func (t *Template) String() string { return t.src }

// Parts returns the parsed pieces of the template.
func (t *Template) Parts() []Part { return t.parts }

// Uses reports whether the template uses variable v.
func (t *Template) Uses(v Var) bool {
	for _, p := range t.parts {
		if p.Var == v {
			return true
		}
	}
	return false
}

// UsesSubject reports whether the rendered directory depends on the subject.
func (t *Template) UsesSubject() bool {
	return t.Uses(VarSubject) || t.Uses(VarSubjectToken)
}

// UsesTime reports whether the rendered directory depends on the time.
func (t *Template) UsesTime() bool {
	for _, p := range t.parts {
		if p.Var >= VarDate && p.Var <= VarMinute {
			return true
		}
	}
	return false
}

// Names returns the names the template's parts of variable v use
// ({column:<name>}, {header:<Name>}), each once, in template order.
func (t *Template) Names(v Var) []string {
	var names []string
	for _, p := range t.parts {
		if p.Var == v && !slices.Contains(names, p.Text) {
			names = append(names, p.Text)
		}
	}
	return names
}

// MaxDirLen returns the longest directory the template renders for a
// stream and a consumer: a subject, a subject token, a column or a header
// takes at most MaxValueLen bytes, {date} 10, {year} 4 and the other time
// variables 2, whatever the message. The stream and the consumer are
// counted as if they started a segment (AppendSegment), the longer form.
func (t *Template) MaxDirLen(stream, consumer string) int {
	n := 0
	for _, p := range t.parts {
		switch p.Var {
		case VarLiteral:
			n += len(p.Text)
		case VarStream:
			n += len(AppendSegment(nil, stream))
		case VarConsumer:
			n += len(AppendSegment(nil, consumer))
		case VarSubject, VarSubjectToken, VarColumn, VarHeader:
			n += MaxValueLen
		case VarDate:
			n += len("2006-01-02")
		case VarYear:
			n += len("2006")
		default: // month, day, hour, minute
			n += 2
		}
	}
	return n
}

// Values are what a template is rendered from.
type Values struct {
	Stream   string
	Subject  string
	Consumer string
	// Time is the message's time: its JetStream timestamp, or its event
	// time. It is rendered in Location, UTC when Location is nil.
	Time     time.Time
	Location *time.Location
	// Columns are the typed columns' values as {column:<name>} renders
	// them; a column not there renders as MissingValue.
	Columns []Field
	// Headers are the message's headers; {header:<Name>} renders the
	// first value of Name, matched as written (NATS header names are
	// case-sensitive), or MissingValue.
	Headers map[string][]string
}

// Field is a typed column's value as text.
type Field struct {
	Name    string
	Text    []byte
	Missing bool // no value: renders as MissingValue
}

// ErrKeyTooLong is returned when a rendered key exceeds MaxKeyLen.
var ErrKeyTooLong = errors.New("pathtemplate: object key longer than 1024 bytes")

// MinYear and MaxYear bound the years the time variables render: the
// four digits {year} and {date} take.
const (
	MinYear = 1
	MaxYear = 9999
)

// InRange reports whether t's year is within MinYear and MaxYear both in
// UTC and in loc (UTC when nil), so that a directory renders t as it is.
// An event time outside is no event time.
func InRange(t time.Time, loc *time.Location) bool {
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return false
	}
	if loc != nil {
		if y := t.In(loc).Year(); y < MinYear || y > MaxYear {
			return false
		}
	}
	return true
}

// AppendDir appends the rendered directory to dst and returns the extended
// buffer. It does not allocate when dst has room.
func (t *Template) AppendDir(dst []byte, v *Values) []byte {
	loc := v.Location
	if loc == nil {
		loc = time.UTC
	}
	ts := v.Time.In(loc)
	// A year outside the four digits would render a sign or a fifth
	// digit: a key longer than config budgets, or one the store refuses.
	if y := ts.Year(); y < MinYear {
		ts = time.Date(MinYear, 1, 1, 0, 0, 0, 0, loc)
	} else if y > MaxYear {
		ts = time.Date(MaxYear, 12, 31, 23, 59, 0, 0, loc)
	}
	start := len(dst)
	for _, p := range t.parts {
		// A value starting a segment must not start it with OwnDir.
		seg := len(dst) == start || dst[len(dst)-1] == '/'
		switch p.Var {
		case VarLiteral:
			dst = append(dst, p.Text...)
		case VarStream:
			dst = appendEscapedAt(dst, v.Stream, seg)
		case VarSubject:
			dst = appendEscapedAt(dst, v.Subject, seg)
		case VarSubjectToken:
			dst = appendEscapedAt(dst, subjectToken(v.Subject, p.Token), seg)
		case VarConsumer:
			dst = appendEscapedAt(dst, v.Consumer, seg)
		case VarDate:
			dst = appendInt(dst, ts.Year(), 4)
			dst = append(dst, '-')
			dst = appendInt(dst, int(ts.Month()), 2)
			dst = append(dst, '-')
			dst = appendInt(dst, ts.Day(), 2)
		case VarYear:
			dst = appendInt(dst, ts.Year(), 4)
		case VarMonth:
			dst = appendInt(dst, int(ts.Month()), 2)
		case VarDay:
			dst = appendInt(dst, ts.Day(), 2)
		case VarHour:
			dst = appendInt(dst, ts.Hour(), 2)
		case VarMinute:
			dst = appendInt(dst, ts.Minute(), 2)
		case VarColumn:
			dst = appendColumn(dst, v.Columns, p.Text, seg)
		case VarHeader:
			if h := v.Headers[p.Text]; len(h) > 0 {
				dst = appendEscapedAt(dst, h[0], seg)
			} else {
				dst = append(dst, MissingValue...)
			}
		}
	}
	return dst
}

// appendColumn appends the value of the column named name in cols, or
// MissingValue; seg says the value starts a segment.
func appendColumn(dst []byte, cols []Field, name string, seg bool) []byte {
	for i := range cols {
		if f := &cols[i]; f.Name == name {
			if f.Missing {
				break
			}
			return appendEscapedAt(dst, f.Text, seg)
		}
	}
	return append(dst, MissingValue...)
}

// Dir renders the directory as a string.
func (t *Template) Dir(v *Values) string {
	return string(t.AppendDir(nil, v))
}

// subjectToken returns the n-th (1-based) dot-separated token of subject, or
// "" when the subject has fewer tokens.
func subjectToken(subject string, n int) string {
	for i := 1; ; i++ {
		dot := strings.IndexByte(subject, '.')
		if i == n {
			if dot < 0 {
				return subject
			}
			return subject[:dot]
		}
		if dot < 0 {
			return ""
		}
		subject = subject[dot+1:]
	}
}

const hexDigits = "0123456789ABCDEF"

// MaxValueLen is the longest a substituted value renders to, in bytes. A
// longer escaped value is cut and ends in "~" and 16 hex digits of the FNV-1a
// hash of the whole value; "~" is never produced by escaping, so a shortened
// value can not equal one that was not.
const MaxValueLen = 128

// AppendEscaped appends value with every byte outside [A-Za-z0-9._-]
// percent-encoded. A value that is empty, "." or ".." would make an empty or
// relative path segment, so it is encoded too: "" as "%00" (NUL can not occur
// in a NATS subject), "." as "%2E" and ".." as "%2E%2E". Values that escape to
// more than MaxValueLen bytes are shortened as MaxValueLen describes.
func AppendEscaped(dst []byte, value string) []byte {
	return appendEscaped(dst, value)
}

// AppendSegment appends value escaped as AppendEscaped does, as the start
// of a path segment: a value beginning with OwnDir has its leading "_"
// written as "%5F", so that the segment can not be mistaken for the
// folder of jetlake's own objects.
func AppendSegment(dst []byte, value string) []byte {
	return appendEscapedAt(dst, value, true)
}

// appendEscaped is AppendEscaped of a string or bytes.
func appendEscaped[T string | []byte](dst []byte, value T) []byte {
	return appendEscapedAt(dst, value, false)
}

// appendEscapedAt is AppendEscaped of a string or bytes, or AppendSegment
// when seg is true.
func appendEscapedAt[T string | []byte](dst []byte, value T, seg bool) []byte {
	switch string(value) {
	case "":
		return append(dst, "%00"...)
	case ".":
		return append(dst, "%2E"...)
	case "..":
		return append(dst, "%2E%2E"...)
	}
	start := len(dst)
	i := 0
	if seg && len(value) >= len(OwnDir) && string(value[:len(OwnDir)]) == OwnDir {
		dst = append(dst, "%5F"...)
		i = 1
	}
	for ; i < len(value); i++ {
		c := value[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', hexDigits[c>>4], hexDigits[c&15])
	}
	if len(dst)-start <= MaxValueLen {
		return dst
	}
	cut := start + MaxValueLen - 17
	// Never split a %XX escape.
	if dst[cut-1] == '%' {
		cut--
	} else if dst[cut-2] == '%' {
		cut -= 2
	}
	dst = append(dst[:cut], '~')
	h := fnv1a(value)
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[(h>>uint(shift))&15])
	}
	return dst
}

func fnv1a[T string | []byte](s T) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// appendInt appends v in decimal, zero-padded to width digits (at most
// 20), after a "-" when v is negative. It takes any int: a time variable
// gets numbers its caller bounded, and a sign must never come out as other
// bytes.
func appendInt(dst []byte, v, width int) []byte {
	var b [21]byte
	i := len(b)
	// Digits are taken from a non-positive number, so that the most
	// negative int needs no negation.
	n := v
	if n > 0 {
		n = -n
	}
	for {
		i--
		b[i] = byte('0' - n%10)
		n /= 10
		width--
		if n == 0 && width <= 0 {
			break
		}
	}
	if v < 0 {
		i--
		b[i] = '-'
	}
	return append(dst, b[i:]...)
}
