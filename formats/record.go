package formats

import (
	"encoding/base64"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSONRecord appends the JSON form of r to dst, as one element of a
// json_lines or json_array body without the separator, and returns the
// extended slice. It uses opts.Metadata, opts.Headers and
// opts.ExactPayload (with opts.Metadata); opts.Format and
// opts.RawDelimiter are ignored. It allocates only to grow dst and, when
// headers are written, to sort their keys.
func AppendJSONRecord(dst []byte, r *Record, opts Options) []byte {
	dst, _ = appendRecord(dst, r, &opts, nil)
	return dst
}

// appendRecord appends the JSON form of r to dst. keys is scratch space for
// sorting header keys; it is returned so a batch can keep its capacity.
func appendRecord(dst []byte, r *Record, opts *Options, keys []string) ([]byte, []string) {
	if !opts.Metadata {
		return appendPayloadOnly(dst, r.Data), keys
	}
	dst = append(dst, `{"stream":`...)
	dst = appendJSONString(dst, r.Stream)
	dst = append(dst, `,"subject":`...)
	dst = appendJSONString(dst, r.Subject)
	dst = append(dst, `,"sequence":`...)
	dst = strconv.AppendUint(dst, r.Sequence, 10)
	dst = append(dst, `,"timestamp":"`...)
	dst = appendTimestamp(dst, r.Time)
	dst = append(dst, '"')
	if opts.Headers && len(r.Headers) > 0 {
		dst, keys = appendHeaders(dst, r.Headers, keys)
	}
	dst = append(dst, `,"payload":`...)
	if len(r.Data) == 0 {
		return append(dst, "null}"...), keys
	}
	start := len(dst)
	dst, ok := appendCompactJSON(dst, r.Data)
	switch {
	case !ok:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, r.Data)
		dst = append(dst, `","payload_encoding":"base64"`...)
	case opts.ExactPayload && !keepsBytes(dst[start:], r.Data):
		dst = append(dst, `,"payload_original":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, r.Data)
		dst = append(dst, '"')
	}
	return append(dst, '}'), keys
}

// keepsBytes reports whether compact, the value appendCompactJSON wrote of
// data, gives data back as ReadRecords reads it. Compaction only removes
// bytes, so the same length means the same bytes; the literal null reads
// back as an empty payload, whose record holds null too.
func keepsBytes(compact, data []byte) bool {
	return len(compact) == len(data) && string(compact) != "null"
}

// jsonBound returns an upper bound of the length appendRecord gives r, so
// that a batch can encode r right into a buffer with that much room. A JSON
// string takes at most six bytes for each byte of its content (\u0000,
// \ufffd for a byte that is not UTF-8, \u2028 for three bytes); a payload
// is either compacted, which only removes bytes, or base64; with
// Options.ExactPayload a compacted payload may be followed by the base64
// of its bytes.
func jsonBound(r *Record, opts *Options) int {
	// The base64 form of the payload and its field, or of the object
	// carrying it without metadata.
	n := base64.StdEncoding.EncodedLen(len(r.Data)) + 64
	if !opts.Metadata {
		return n
	}
	if opts.ExactPayload {
		// ,"payload_original":"<base64>" after the compacted payload.
		n += base64.StdEncoding.EncodedLen(len(r.Data)) + 24
	}
	// The field names, 20 digits of sequence, a timestamp (at most 40 bytes
	// for years outside 0-9999) and two strings.
	n += 160 + 6*(len(r.Stream)+len(r.Subject))
	if opts.Headers && len(r.Headers) > 0 {
		n += 16
		for k, vs := range r.Headers {
			n += 8 + 6*len(k)
			for _, v := range vs {
				n += 3 + 6*len(v)
			}
		}
	}
	return n
}

// appendPayloadOnly appends the record written without metadata: the
// payload's JSON value, null, or an object carrying the base64 of data.
func appendPayloadOnly(dst, data []byte) []byte {
	if len(data) == 0 {
		return append(dst, "null"...)
	}
	dst, ok := appendCompactJSON(dst, data)
	if ok {
		return dst
	}
	dst = append(dst, `{"payload":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, `","payload_encoding":"base64"}`...)
}

// appendHeaders appends the "headers" field with sorted keys, values in
// their order.
func appendHeaders(dst []byte, h map[string][]string, keys []string) ([]byte, []string) {
	keys = keys[:0]
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, `,"headers":{`...)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ":["...)
		for j, v := range h[k] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, v)
		}
		dst = append(dst, ']')
	}
	// Drop the references so the scratch does not keep the caller's
	// strings alive.
	clear(keys)
	return append(dst, '}'), keys[:0]
}

// timestampLayout is RFC 3339 with a fixed nine-digit fraction, so every
// timestamp has the same width and sorts as text.
const timestampLayout = "2006-01-02T15:04:05.000000000Z"

// appendTimestamp appends t in UTC in timestampLayout. It writes the digits
// itself: time.Time.AppendFormat parses its layout on every call, which cost
// more than the rest of a metadata record.
func appendTimestamp(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		// Not representable in RFC 3339; JetStream never sends these.
		return t.AppendFormat(dst, timestampLayout)
	}
	hour, minute, second := t.Clock()
	dst = appendPadded(dst, year, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, int(month), 2)
	dst = append(dst, '-')
	dst = appendPadded(dst, day, 2)
	dst = append(dst, 'T')
	dst = appendPadded(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, minute, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, second, 2)
	dst = append(dst, '.')
	dst = appendPadded(dst, t.Nanosecond(), 9)
	return append(dst, 'Z')
}

// appendPadded appends the non-negative v as exactly width decimal digits,
// zero-padded; v must have at most width digits.
func appendPadded(dst []byte, v, width int) []byte {
	dst = append(dst, "000000000"[:width]...)
	for i := len(dst) - 1; v > 0; i-- {
		dst[i] = byte('0' + v%10)
		v /= 10
	}
	return dst
}

// appendJSONString appends s as a JSON string. It escapes '"', '\\', control
// characters, U+2028 and U+2029 (line terminators to some JSON lines
// readers), and writes each byte that is not valid UTF-8 as \ufffd.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0 // s[start:i] is still to be copied
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
