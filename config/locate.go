package config

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The TOML decoder tells which keys a file has but not where they are, so
// this file finds the line of every key and table in the source text itself.
// It follows the structure of TOML (tables, arrays of tables, dotted keys,
// inline tables and arrays, all four kinds of strings, comments) closely
// enough to find keys, and trusts the decoder to have rejected invalid
// syntax. On any input it stops without panicking.

// keyPath names a key by its place in the document: keys, and 1-based
// indexes into arrays.
type keyPath []pathElem

type pathElem struct {
	key   string
	index int // > 0 for an array element; key is unused then
}

// key returns the path of key k in the table at p.
func (p keyPath) key(k string) keyPath {
	return append(p[:len(p):len(p)], pathElem{key: k})
}

// index returns the path of the i-th (1-based) element of the array at p.
func (p keyPath) index(i int) keyPath {
	return append(p[:len(p):len(p)], pathElem{index: i})
}

// String formats the path the way problems show it: "rotation.max_file_size",
// "streams[2].ack_wait", with keys that are not bare TOML keys quoted.
func (p keyPath) String() string {
	var b strings.Builder
	for i, e := range p {
		if e.index > 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(quoteKey(e.key))
	}
	return b.String()
}

// quoteKey returns k as written in TOML: bare when it can be, quoted if not.
func quoteKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		if !isBareKeyByte(k[i]) {
			return strconv.Quote(k)
		}
	}
	return k
}

func isBareKeyByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// lineIndex maps keyPath.String() of every key and table in a file to the
// 1-based line where it is defined.
type lineIndex struct {
	lines    map[string]int
	explicit map[string]bool // defined by a key or header, not only as the parent of a dotted key
}

// line returns the line of p or, when p is not in the file, of its nearest
// enclosing table that is; 1 when there is none.
func (ix *lineIndex) line(p keyPath) int {
	for ; len(p) > 0; p = p[:len(p)-1] {
		if n, ok := ix.lines[p.String()]; ok {
			return n
		}
	}
	return 1
}

// mark records that p is defined at line. A table named only as part of a
// dotted key or a longer header ("implicit") yields to its own header.
func (ix *lineIndex) mark(p keyPath, line int, explicit bool) {
	k := p.String()
	if _, ok := ix.lines[k]; ok && (ix.explicit[k] || !explicit) {
		return
	}
	ix.lines[k] = line
	if explicit {
		ix.explicit[k] = true
	}
}

// locate returns the line of every key and table of a TOML document.
func locate(src string) *lineIndex {
	// The decoder skips a byte order mark; so does the locator, which
	// does not change line numbers.
	for _, bom := range []string{"\xef\xbb\xbf", "\xff\xfe", "\xfe\xff"} {
		if strings.HasPrefix(src, bom) {
			src = src[len(bom):]
			break
		}
	}
	s := &scanner{
		src:    src,
		line:   1,
		ix:     &lineIndex{lines: make(map[string]int), explicit: make(map[string]bool)},
		arrays: make(map[string]int),
	}
	s.document()
	return s.ix
}

type scanner struct {
	src    string
	pos    int
	line   int
	ix     *lineIndex
	table  keyPath        // the table that key/value lines belong to
	arrays map[string]int // elements so far of each array of tables
}

func (s *scanner) eof() bool { return s.pos >= len(s.src) }

func (s *scanner) peek() byte {
	if s.eof() {
		return 0
	}
	return s.src[s.pos]
}

// next consumes one byte, counting lines.
func (s *scanner) next() {
	if s.eof() {
		return
	}
	if s.src[s.pos] == '\n' {
		s.line++
	}
	s.pos++
}

func (s *scanner) skipBlanks() {
	for c := s.peek(); c == ' ' || c == '\t'; c = s.peek() {
		s.pos++
	}
}

// skipSpace skips whitespace, newlines and comments.
func (s *scanner) skipSpace() {
	for !s.eof() {
		switch s.src[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.next()
		case '#':
			s.skipLine()
		default:
			return
		}
	}
}

// skipLine skips to the end of the line, leaving the newline.
func (s *scanner) skipLine() {
	for !s.eof() && s.src[s.pos] != '\n' {
		s.pos++
	}
}

func (s *scanner) document() {
	for {
		s.skipSpace()
		if s.eof() {
			return
		}
		start := s.pos
		if s.peek() == '[' {
			s.header()
		} else {
			s.keyValue(s.table)
		}
		s.skipLine()
		if s.pos == start {
			s.next()
		}
	}
}

// header reads a "[table]" or "[[array]]" header.
func (s *scanner) header() {
	line := s.line
	s.pos++
	array := s.peek() == '['
	if array {
		s.pos++
	}
	keys := s.keys()
	if len(keys) == 0 {
		return
	}
	var p keyPath
	for i, k := range keys {
		p = p.key(k)
		if i == len(keys)-1 {
			break
		}
		// A header inside an array of tables extends its last element.
		if n := s.arrays[p.String()]; n > 0 {
			p = p.index(n)
		}
		s.ix.mark(p, line, false)
	}
	if array {
		s.ix.mark(p, line, true)
		n := s.arrays[p.String()] + 1
		s.arrays[p.String()] = n
		p = p.index(n)
	}
	s.ix.mark(p, line, true)
	s.table = p
}

// keyValue reads "key = value" in the table at table.
func (s *scanner) keyValue(table keyPath) {
	line := s.line
	keys := s.keys()
	if len(keys) == 0 {
		return
	}
	s.skipBlanks()
	if s.peek() != '=' {
		return
	}
	s.pos++
	p := table
	for i, k := range keys {
		p = p.key(k)
		s.ix.mark(p, line, i == len(keys)-1)
	}
	s.value(p)
}

// keys reads a dotted key such as `a."b.c".d`.
func (s *scanner) keys() []string {
	var keys []string
	for {
		s.skipBlanks()
		k, ok := s.simpleKey()
		if !ok {
			return keys
		}
		keys = append(keys, k)
		s.skipBlanks()
		if s.peek() != '.' {
			return keys
		}
		s.pos++
	}
}

func (s *scanner) simpleKey() (string, bool) {
	switch c := s.peek(); {
	case c == '"':
		return s.basicString(), true
	case c == '\'':
		return s.literalString(), true
	case isBareKeyByte(c):
		start := s.pos
		for !s.eof() && isBareKeyByte(s.src[s.pos]) {
			s.pos++
		}
		return s.src[start:s.pos], true
	}
	return "", false
}

// value skips the value at p, marking the keys and elements inside it.
func (s *scanner) value(p keyPath) {
	s.skipBlanks()
	switch {
	case strings.HasPrefix(s.src[s.pos:], `"""`):
		s.multiLineString('"')
	case strings.HasPrefix(s.src[s.pos:], `'''`):
		s.multiLineString('\'')
	case s.peek() == '"':
		s.basicString()
	case s.peek() == '\'':
		s.literalString()
	case s.peek() == '[':
		s.array(p)
	case s.peek() == '{':
		s.inlineTable(p)
	default:
		// A number, boolean or date-time; a date-time may hold a space.
		for !s.eof() && !strings.ContainsRune(",]}#\r\n", rune(s.src[s.pos])) {
			s.pos++
		}
	}
}

func (s *scanner) array(p keyPath) {
	s.pos++
	n := 0
	for {
		s.skipSpace()
		switch s.peek() {
		case 0:
			return
		case ']':
			s.pos++
			return
		case ',':
			s.pos++
			continue
		}
		n++
		e := p.index(n)
		s.ix.mark(e, s.line, true)
		start := s.pos
		s.value(e)
		if s.pos == start {
			s.next()
		}
	}
}

func (s *scanner) inlineTable(p keyPath) {
	s.pos++
	for {
		s.skipSpace()
		switch s.peek() {
		case 0:
			return
		case '}':
			s.pos++
			return
		case ',':
			s.pos++
			continue
		}
		start := s.pos
		s.keyValue(p)
		if s.pos == start {
			s.next()
		}
	}
}

// basicString reads a "string" and returns its value.
func (s *scanner) basicString() string {
	s.pos++
	var b strings.Builder
	for !s.eof() {
		c := s.src[s.pos]
		switch c {
		case '"':
			s.pos++
			return b.String()
		case '\n':
			return b.String()
		case '\\':
			s.escape(&b)
		default:
			b.WriteByte(c)
			s.pos++
		}
	}
	return b.String()
}

// escape reads an escape sequence of a basic string into b.
func (s *scanner) escape(b *strings.Builder) {
	s.pos++ // the backslash
	if s.eof() {
		return
	}
	c := s.src[s.pos]
	s.pos++
	switch c {
	case 'b':
		b.WriteByte('\b')
	case 't':
		b.WriteByte('\t')
	case 'n':
		b.WriteByte('\n')
	case 'f':
		b.WriteByte('\f')
	case 'r':
		b.WriteByte('\r')
	case 'e':
		b.WriteByte(0x1b)
	case 'x', 'u', 'U':
		n := 2
		switch c {
		case 'u':
			n = 4
		case 'U':
			n = 8
		}
		if s.pos+n > len(s.src) {
			s.pos = len(s.src)
			return
		}
		r, err := strconv.ParseUint(s.src[s.pos:s.pos+n], 16, 32)
		s.pos += n
		if err == nil && r <= utf8.MaxRune {
			b.WriteRune(rune(r))
		}
	case '\n':
		// Only in multi-line strings: a line-ending backslash.
		s.line++
	default:
		b.WriteByte(c)
	}
}

// literalString reads a 'string' and returns its value.
func (s *scanner) literalString() string {
	s.pos++
	start := s.pos
	for !s.eof() {
		switch s.src[s.pos] {
		case '\'':
			s.pos++
			return s.src[start : s.pos-1]
		case '\n':
			return s.src[start:s.pos]
		}
		s.pos++
	}
	return s.src[start:]
}

// multiLineString skips a multi-line string quoted with three q. Up to two
// more q may precede the closing delimiter and belong to the value.
func (s *scanner) multiLineString(q byte) {
	delim := strings.Repeat(string(q), 3)
	s.pos += 3
	for !s.eof() {
		switch {
		case q == '"' && s.src[s.pos] == '\\':
			s.pos++
			s.next()
		case strings.HasPrefix(s.src[s.pos:], delim):
			s.pos += 3
			for i := 0; i < 2 && s.peek() == q; i++ {
				s.pos++
			}
			return
		default:
			s.next()
		}
	}
}
