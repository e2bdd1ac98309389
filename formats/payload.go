package formats

import "unicode/utf8"

// maxDepth is the deepest nesting of arrays and objects a payload may have
// and still be written as JSON; encoding/json has the same limit.
const maxDepth = 10000

// appendCompactJSON appends src to dst without insignificant whitespace and
// reports whether src is exactly one JSON value (RFC 8259, surrounded by
// optional whitespace) in valid UTF-8, nested at most maxDepth deep. When
// it is not, dst is returned with its original length.
//
// Validation and compaction are one pass. Everything but whitespace between
// tokens is copied byte for byte, so the result equals what json.Compact
// writes. The scanner keeps its open containers on a slice instead of
// recursing, so deep input cannot exhaust the goroutine stack.
func appendCompactJSON(dst, src []byte) ([]byte, bool) {
	start := len(dst)
	// open holds '{' or '[' for each container not yet closed; most payloads
	// fit the array, which then stays on the stack.
	var openArray [64]byte
	open := openArray[:0]
	var ok bool
	i := 0
value:
	for {
		// A value starts at src[i:], after optional whitespace.
		i = skipSpace(src, i)
		if i == len(src) {
			return dst[:start], false
		}
		switch c := src[i]; c {
		case '{', '[':
			if len(open) == maxDepth {
				return dst[:start], false
			}
			var empty bool
			if dst, i, empty, ok = openContainer(dst, src, i); !ok {
				return dst[:start], false
			}
			if !empty {
				open = append(open, c)
				continue value // the first element or member value
			}
		case '"':
			if dst, i, ok = compactString(dst, src, i); !ok {
				return dst[:start], false
			}
		case 't', 'f', 'n':
			if dst, i, ok = compactLiteral(dst, src, i); !ok {
				return dst[:start], false
			}
		default:
			if dst, i, ok = compactNumber(dst, src, i); !ok {
				return dst[:start], false
			}
		}

		// A value ended before src[i]: close containers until one takes
		// another element, or the input ends.
		for {
			i = skipSpace(src, i)
			if len(open) == 0 {
				if i != len(src) {
					return dst[:start], false
				}
				return dst, true
			}
			if i == len(src) {
				return dst[:start], false
			}
			c, top := src[i], open[len(open)-1]
			i++
			switch {
			case c == ']' && top == '[', c == '}' && top == '{':
				dst = append(dst, c)
				open = open[:len(open)-1]
			case c == ',':
				dst = append(dst, ',')
				if top == '{' {
					if dst, i, ok = compactKey(dst, src, skipSpace(src, i)); !ok {
						return dst[:start], false
					}
				}
				continue value
			default:
				return dst[:start], false
			}
		}
	}
}

// openContainer appends the '{' or '[' at src[i] and what completes it or
// leads to its first value. An empty container is a complete value:
// openContainer appends its closing bracket too and reports empty. Otherwise
// it appends an object's first member name and its colon, so that the first
// element or member value comes next. It returns the index after what it
// appended; ok is false when src is not JSON there.
//
// The stack of open containers stays with the caller, on its stack.
func openContainer(dst, src []byte, i int) (_ []byte, _ int, empty, ok bool) {
	c := src[i]
	closing := byte(']')
	if c == '{' {
		closing = '}'
	}
	dst = append(dst, c)
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == closing {
		return append(dst, closing), i + 1, true, true
	}
	if c == '{' {
		dst, i, ok = compactKey(dst, src, i)
		return dst, i, false, ok
	}
	return dst, i, false, true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// compactKey appends an object member's name and its colon; src[i] must
// open the name. It returns the index after the colon.
func compactKey(dst, src []byte, i int) ([]byte, int, bool) {
	if i == len(src) || src[i] != '"' {
		return dst, i, false
	}
	dst, i, ok := compactString(dst, src, i)
	if !ok {
		return dst, i, false
	}
	i = skipSpace(src, i)
	if i == len(src) || src[i] != ':' {
		return dst, i, false
	}
	return append(dst, ':'), i + 1, true
}

// plainStringByte marks the bytes a JSON string holds as themselves: ASCII
// from space up, except the quote and the backslash. Indexed by any byte, so
// the lookup needs no bounds check.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// compactString appends the string that src[i] opens, as written, and
// returns the index after its closing quote. It rejects control characters,
// unknown escapes and bytes that are not valid UTF-8.
func compactString(dst, src []byte, i int) ([]byte, int, bool) {
	start := i
	for i++; i < len(src); {
		c := src[i]
		if plainStringByte[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return append(dst, src[start:i+1]...), i + 1, true
		case c == '\\':
			if i+1 == len(src) {
				return dst, i, false
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(src)-i < 6 || !isHex(src[i+2]) || !isHex(src[i+3]) || !isHex(src[i+4]) || !isHex(src[i+5]) {
					return dst, i, false
				}
				i += 6
			default:
				return dst, i, false
			}
		case c < 0x20:
			return dst, i, false
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				return dst, i, false
			}
			i += size
		}
	}
	return dst, i, false // no closing quote
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// compactLiteral appends the true, false or null at src[i:].
func compactLiteral(dst, src []byte, i int) ([]byte, int, bool) {
	lit := "null"
	switch src[i] {
	case 't':
		lit = "true"
	case 'f':
		lit = "false"
	}
	if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
		return dst, i, false
	}
	return append(dst, lit...), i + len(lit), true
}

// compactNumber appends the number at src[i:] as written:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func compactNumber(dst, src []byte, i int) ([]byte, int, bool) {
	start := i
	if src[i] == '-' {
		i++
	}
	switch {
	case i == len(src):
		return dst, i, false
	case src[i] == '0':
		i++
	case '1' <= src[i] && src[i] <= '9':
		i = skipDigits(src, i+1)
	default:
		return dst, i, false
	}
	if i < len(src) && src[i] == '.' {
		j := skipDigits(src, i+1)
		if j == i+1 {
			return dst, i, false
		}
		i = j
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		j := skipDigits(src, i)
		if j == i {
			return dst, i, false
		}
		i = j
	}
	return append(dst, src[start:i]...), i, true
}

// skipDigits returns the index of the first byte at or after i that is not
// an ASCII digit.
func skipDigits(src []byte, i int) int {
	for i < len(src) && '0' <= src[i] && src[i] <= '9' {
		i++
	}
	return i
}
