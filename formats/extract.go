package formats

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// pathSeg is one step of a source path: a member name, which is also an
// array index when it is a canonical non-negative integer.
type pathSeg struct {
	name  string
	index int // -1 when name is not an array index
}

// maxIndex bounds array indexes in paths, so that an index never overflows
// and a path stays readable.
const maxIndex = 1<<31 - 1

// parsePath splits a dotted source path. It reports false when the path or
// one of its segments is empty.
func parsePath(src string) ([]pathSeg, bool) {
	if src == "" {
		return nil, false
	}
	var segs []pathSeg
	for name := range strings.SplitSeq(src, ".") {
		if name == "" {
			return nil, false
		}
		segs = append(segs, pathSeg{name: name, index: arrayIndex(name)})
	}
	return segs, true
}

// arrayIndex returns the index s names, or -1: "0", "7" and "12" are
// indexes, "-1", "01", "+1" and "1e2" are not.
func arrayIndex(s string) int {
	if s == "0" {
		return 0
	}
	if s == "" || s[0] < '1' || s[0] > '9' || len(s) > 10 {
		return -1
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
		n = n*10 + int(s[i]-'0')
	}
	if n > maxIndex {
		return -1
	}
	return n
}

// lookup returns the value at path in doc, which must be compact valid
// JSON as appendCompactJSON writes it. It reports false when a member is
// missing, an index is out of range, or a step meets a value that is not an
// object or array. When an object has a member name more than once, the
// last one counts, as it does for encoding/json. scratch is space for
// unescaping member names; it is returned for reuse.
func lookup(doc []byte, path []pathSeg, scratch []byte) ([]byte, []byte, bool) {
	v := doc
	for _, seg := range path {
		var ok bool
		switch v[0] {
		case '{':
			v, scratch, ok = member(v, seg.name, scratch)
		case '[':
			v, ok = element(v, seg.index)
		}
		if !ok {
			return nil, scratch, false
		}
	}
	return v, scratch, true
}

// members sets found[i] to the value of the last member of the object obj
// named names[i], or nil, scanning obj once for all the names.
func members(obj []byte, names []string, found [][]byte, scratch []byte) []byte {
	clear(found)
	i := 1
	if obj[i] == '}' {
		return scratch
	}
	for {
		keyEnd := skipString(obj, i)
		key := obj[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			scratch = appendUnquoted(scratch[:0], key)
			key = scratch
		}
		start := keyEnd + 1 // after the colon
		end := skipValue(obj, start)
		for n, name := range names {
			if string(key) == name {
				found[n] = obj[start:end]
			}
		}
		if obj[end] != ',' {
			return scratch
		}
		i = end + 1
	}
}

// member returns the value of the last member of the object obj named name.
func member(obj []byte, name string, scratch []byte) ([]byte, []byte, bool) {
	var found []byte
	i := 1
	if obj[i] == '}' {
		return nil, scratch, false
	}
	for {
		keyEnd := skipString(obj, i)
		key := obj[i+1 : keyEnd-1]
		var match bool
		if bytes.IndexByte(key, '\\') < 0 {
			match = string(key) == name
		} else {
			scratch = appendUnquoted(scratch[:0], key)
			match = string(scratch) == name
		}
		start := keyEnd + 1 // after the colon
		end := skipValue(obj, start)
		if match {
			found = obj[start:end]
		}
		if obj[end] != ',' {
			return found, scratch, found != nil
		}
		i = end + 1
	}
}

// element returns the element at index of the array arr.
func element(arr []byte, index int) ([]byte, bool) {
	if index < 0 || arr[1] == ']' {
		return nil, false
	}
	i := 1
	for n := 0; ; n++ {
		end := skipValue(arr, i)
		if n == index {
			return arr[i:end], true
		}
		if arr[end] != ',' {
			return nil, false
		}
		i = end + 1
	}
}

// skipValue returns the index after the value that starts at doc[i].
func skipValue(doc []byte, i int) int {
	switch doc[i] {
	case '"':
		return skipString(doc, i)
	case '{', '[':
		depth := 0
		for i < len(doc) {
			switch doc[i] {
			case '"':
				i = skipString(doc, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(doc) {
			switch doc[i] {
			case ',', '}', ']':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index after the string that starts at doc[i].
func skipString(doc []byte, i int) int {
	start := i + 1
	for i = start; ; i++ {
		j := bytes.IndexByte(doc[i:], '"')
		if j < 0 {
			return len(doc)
		}
		i += j
		// The quote ends the string unless an odd number of backslashes
		// escape it.
		k := i
		for k > start && doc[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
	}
}

// appendUnquoted appends the contents of a JSON string, given without its
// quotes, with escapes decoded as encoding/json decodes them: a \u escape
// of a lone surrogate becomes U+FFFD. s must be valid, as appendCompactJSON
// checks.
func appendUnquoted(dst, s []byte) []byte {
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		switch c := s[1]; c {
		case 'u':
			r := hex4(s[2:6])
			s = s[6:]
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					r2 = hex4(s[2:6])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					s = s[6:]
					r = d
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
		s = s[2:]
	}
	return dst
}

// hex4 decodes four hex digits.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
