package formats

import (
	"strconv"
	"unicode/utf8"
)

// The envelope of a JSON record is read by hand where it is written the
// way the encoder writes it, which is every record jetlake wrote: an
// object of the envelope's keys, each once and spelled exactly, its
// strings without escapes. The payload and the headers are checked as
// JSON as encoding/json would check them. Anything else, however valid,
// goes to encoding/json (scanEnvelope reports false), so both read every
// record alike; FuzzScanEnvelope holds them to it. Read by encoding/json,
// each record costs about twelve times as much.

// envelopeKeys are the bits of the keys scanEnvelope has seen.
const (
	keyStream = 1 << iota
	keySubject
	keySequence
	keyTimestamp
	keyHeaders
	keyPayload
	keyPayloadEncoding
	keyPayloadOriginal
)

// envelopeStrings holds the strings of the record scanEnvelope read last,
// which env points at.
type envelopeStrings struct {
	stream, subject, timestamp, encoding string
	sequence                             uint64
}

// scanEnvelope fills env, reset by the caller, from the JSON record b, and
// reports whether it could; when it could not, env holds part of b.
func scanEnvelope(b []byte, env *envelope, s *envelopeStrings) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	seen := 0
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		kEnd, ok := valueEnd(b, i, 0)
		if !ok {
			return false
		}
		key := b[i+1 : kEnd-1]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		end, ok := valueEnd(b, i, 0)
		if !ok {
			return false
		}
		v := b[i:end]
		bit := 0
		switch string(key) {
		case "stream":
			bit, ok = keyStream, plainString(v, &s.stream)
			env.Stream = &s.stream
		case "subject":
			bit, ok = keySubject, plainString(v, &s.subject)
			env.Subject = &s.subject
		case "timestamp":
			bit, ok = keyTimestamp, plainString(v, &s.timestamp)
			env.Timestamp = &s.timestamp
		case "payload_encoding":
			bit, ok = keyPayloadEncoding, plainString(v, &s.encoding)
			env.PayloadEncoding = &s.encoding
		case "sequence":
			bit, ok = keySequence, plainUint(v, &s.sequence)
			env.Sequence = &s.sequence
		case "payload":
			bit = keyPayload
			env.Payload = append(env.Payload[:0], v...)
		case "payload_original":
			bit = keyPayloadOriginal
			env.PayloadOriginal = append(env.PayloadOriginal[:0], v...)
		case "headers":
			bit, ok = keyHeaders, plainHeaders(v, &env.Headers)
		}
		if bit == 0 || !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		i = skipSpace(b, end)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// plainString sets *s to the JSON string v when it has no escapes and is
// UTF-8, reusing *s when it holds the same text.
func plainString(v []byte, s *string) bool {
	if len(v) < 2 || v[0] != '"' {
		return false
	}
	text := v[1 : len(v)-1]
	for _, c := range text {
		if c == '\\' {
			return false
		}
	}
	if !utf8.Valid(text) {
		return false
	}
	*s = reuseString(*s, text)
	return true
}

// plainUint sets *q to the JSON number v when it is an integer that fits.
func plainUint(v []byte, q *uint64) bool {
	if len(v) == 0 || len(v) > 20 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	*q = n
	return err == nil
}

// plainHeaders sets *h to the headers v holds when it is an object of
// arrays of plain strings, or null.
func plainHeaders(v []byte, h *map[string][]string) bool {
	if string(v) == "null" {
		*h = nil
		return true
	}
	i := skipSpace(v, 1)
	m := map[string][]string{}
	*h = m
	if v[0] != '{' {
		return false
	}
	if v[i] == '}' {
		return true
	}
	for {
		kEnd, _ := valueEnd(v, i, 0) // v is valid JSON already
		var k string
		if !plainString(v[i:kEnd], &k) {
			return false
		}
		if _, dup := m[k]; dup {
			return false
		}
		i = skipSpace(v, skipSpace(v, kEnd)+1)
		if v[i] != '[' {
			return false
		}
		var vals []string
		i = skipSpace(v, i+1)
		for v[i] != ']' {
			end, _ := valueEnd(v, i, 0)
			var s string
			if !plainString(v[i:end], &s) {
				return false
			}
			vals = append(vals, s)
			if i = skipSpace(v, end); v[i] == ',' {
				i = skipSpace(v, i+1)
			}
		}
		if vals == nil {
			vals = []string{}
		}
		m[k] = vals
		if i = skipSpace(v, i+1); v[i] == '}' {
			return true
		}
		i = skipSpace(v, i+1) // the comma
	}
}

// scanDepth bounds the nesting valueEnd follows; deeper values go to
// encoding/json.
const scanDepth = 1000

// valueEnd returns the end of the JSON value that starts at b[i], checking
// its grammar as encoding/json does; false when it is not a JSON value.
func valueEnd(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return stringEnd(b, i+1)
	case c == '{' || c == '[':
		if depth == scanDepth {
			return 0, false
		}
		return containerEnd(b, i, depth)
	case c == '-' || c >= '0' && c <= '9':
		return numberEnd(b, i)
	case c == 't':
		return literalEnd(b, i, "true")
	case c == 'f':
		return literalEnd(b, i, "false")
	case c == 'n':
		return literalEnd(b, i, "null")
	}
	return 0, false
}

// containerEnd is valueEnd of the object or array at b[i].
func containerEnd(b []byte, i, depth int) (int, bool) {
	object := b[i] == '{'
	closing := byte(']')
	if object {
		closing = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, true
	}
	for {
		var ok bool
		if object {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			if i, ok = stringEnd(b, i+1); !ok {
				return 0, false
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return 0, false
			}
			i = skipSpace(b, i+1)
		}
		if i, ok = valueEnd(b, i, depth+1); !ok {
			return 0, false
		}
		if i = skipSpace(b, i); i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case closing:
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// stringEnd returns the end of the JSON string whose text starts at b[i].
func stringEnd(b []byte, i int) (int, bool) {
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false
					}
				}
				i += 6
			default:
				return 0, false
			}
		default:
			i++
		}
	}
	return 0, false
}

// numberEnd returns the end of the JSON number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsEnd(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digitsEnd(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digitsEnd(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// literalEnd returns the end of lit at b[i].
func literalEnd(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}
