package iceberg

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/iceberg-go"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Partitioner renders the partition of a message's row as the folder its
// data file goes to, "<field>=<value>/...", the way Iceberg names
// partitions (PartitionSpec.PartitionToPath): a data file holds one
// partition, so the rows of one folder make one file. Partitions may use
// the envelope's stream, subject, sequence and timestamp columns, known for
// every message before its payload is read, and the typed columns of
// [[output.columns]], whose values the runner reads from the payload
// (formats.Extractor). A typed column without a value is null, and goes in
// the partition Iceberg names null.
//
// A value Iceberg would name in more than pathtemplate.MaxValueLen bytes
// is named as a path template names it, cut with a hash of the whole value
// (see appendValue), so that any publisher's subject makes an object key
// S3 accepts. A typed string column's value "null" is named "%6Eull", not
// "null" as Iceberg names both it and the null partition: the two are
// different partitions, so they need different folders. The folder is only
// where the file lies: readers take a file's partition from its manifest
// entry, which holds the whole value, never from its path.
type Partitioner struct {
	fields []partField
}

// partField is one field of the partition spec.
type partField struct {
	name   string // escaped, with "="
	source envelopeColumn
	col    int // colTyped: the column's index in AppendDir's values
	kind   partKind
	n      int               // bucket's buckets, truncate's width
	tr     iceberg.Transform // for the envelope's bucket and truncate
	typ    iceberg.Type      // the source column's
}

type envelopeColumn int

const (
	colStream envelopeColumn = iota
	colSubject
	colSequence
	colTimestamp
	colTyped // a typed column of [[output.columns]]
)

type partKind int

const (
	partIdentity partKind = iota
	partYear
	partMonth
	partDay
	partHour
	partBucket
	partTruncate
	partOther // the envelope's bucket, truncate and identity of sequence and timestamp, through iceberg-go's transforms
)

// NewPartitioner returns the Partitioner of spec over schema. columns are
// the names of the typed columns, in the order of the values AppendDir
// takes ([[output.columns]] order). A partition field whose source is
// neither an envelope column nor one of columns is an error, and so is a
// transform the source's type does not take.
func NewPartitioner(schema *iceberg.Schema, spec iceberg.PartitionSpec, columns []string) (*Partitioner, error) {
	p := &Partitioner{}
	for _, f := range spec.Fields() {
		if len(f.SourceIDs) != 1 {
			return nil, fmt.Errorf("partition field %s: want one source column", f.Name)
		}
		src, ok := schema.FindFieldByID(f.SourceIDs[0])
		if !ok {
			return nil, fmt.Errorf("partition field %s: no source column %d", f.Name, f.SourceIDs[0])
		}
		if !f.Transform.CanTransform(src.Type) {
			return nil, fmt.Errorf("partition field %s: %s does not take column %s of type %s", f.Name, f.Transform, src.Name, src.Type)
		}
		pf := partField{name: url.QueryEscape(f.Name) + "=", tr: f.Transform, typ: src.Type}
		switch src.Name {
		case "stream":
			pf.source = colStream
		case "subject":
			pf.source = colSubject
		case "sequence":
			pf.source = colSequence
		case "timestamp":
			pf.source = colTimestamp
		default:
			pf.source, pf.col = colTyped, slices.Index(columns, src.Name)
			if pf.col < 0 {
				return nil, fmt.Errorf("partition field %s: column %s is neither one of stream, subject, sequence and timestamp nor a typed column of the connector", f.Name, src.Name)
			}
		}
		switch tr := f.Transform.(type) {
		case iceberg.IdentityTransform:
			pf.kind = partIdentity
			if pf.source == colSequence || pf.source == colTimestamp {
				pf.kind = partOther
			}
		case iceberg.YearTransform:
			pf.kind = partYear
		case iceberg.MonthTransform:
			pf.kind = partMonth
		case iceberg.DayTransform:
			pf.kind = partDay
		case iceberg.HourTransform:
			pf.kind = partHour
		case iceberg.BucketTransform:
			pf.kind, pf.n = partBucket, tr.NumBuckets
		case iceberg.TruncateTransform:
			pf.kind, pf.n = partTruncate, tr.Width
		default:
			if pf.source == colTyped {
				return nil, fmt.Errorf("partition field %s: transform %s is not one jetlake renders", f.Name, f.Transform)
			}
			pf.kind = partOther
		}
		if pf.source != colTyped && (pf.kind == partBucket || pf.kind == partTruncate) {
			pf.kind = partOther
		}
		p.fields = append(p.fields, pf)
	}
	return p, nil
}

// AppendDir appends the partition folder of a row to dst. vals are the
// row's typed columns' values, in the order of NewPartitioner's columns; a
// column without a value (vals shorter, or the value Null) is null.
// Rendering allocates nothing but for the envelope's bucket and truncate,
// its sequence and timestamp identity, and a value longer than the bound.
func (p *Partitioner) AppendDir(dst []byte, stream, subject string, seq uint64, ts time.Time, vals []formats.Value) []byte {
	ts = ts.UTC()
	for i := range p.fields {
		f := &p.fields[i]
		if i > 0 {
			dst = append(dst, '/')
		}
		dst = append(dst, f.name...)
		if f.source == colTyped {
			var v formats.Value
			if f.col < len(vals) {
				v = vals[f.col]
			} else {
				v.Null = true
			}
			dst = f.appendTyped(dst, v)
			continue
		}
		switch {
		case f.kind == partIdentity && f.source == colStream:
			dst = appendValue(dst, stream)
		case f.kind == partIdentity && f.source == colSubject:
			dst = appendValue(dst, subject)
		case f.kind == partHour || f.kind == partDay || f.kind == partMonth || f.kind == partYear:
			dst = appendTime(dst, f.kind, ts)
		default:
			var lit iceberg.Literal
			switch f.source {
			case colStream:
				lit = iceberg.StringLiteral(stream)
			case colSubject:
				lit = iceberg.StringLiteral(subject)
			case colSequence:
				lit = iceberg.Int64Literal(int64(seq))
			case colTimestamp:
				lit = iceberg.TimestampLiteral(ts.UnixMicro())
			}
			out := f.tr.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: lit})
			var v any
			if out.Valid {
				v = out.Val.Any()
			}
			dst = appendValue(dst, f.tr.ToHumanStrType(f.typ, v))
		}
	}
	return dst
}

// appendTime appends the year, month, day or hour of t (UTC) as Iceberg
// names it.
func appendTime(dst []byte, kind partKind, t time.Time) []byte {
	switch kind {
	case partHour:
		return t.AppendFormat(dst, "2006-01-02-15")
	case partDay:
		return t.AppendFormat(dst, "2006-01-02")
	case partMonth:
		return t.AppendFormat(dst, "2006-01")
	}
	return t.AppendFormat(dst, "2006")
}

// appendTyped appends the partition value of a typed column's value v, as
// iceberg-go's transforms and ToHumanStrType name it, without allocating
// (but for a value longer than the bound).
func (f *partField) appendTyped(dst []byte, v formats.Value) []byte {
	if v.Null {
		return append(dst, "null"...)
	}
	var tmp [64]byte
	switch f.kind {
	case partYear, partMonth, partDay, partHour:
		t, ok := v.Time()
		if !ok {
			return append(dst, "null"...)
		}
		return appendTime(dst, f.kind, t)
	case partBucket:
		var h uint32
		switch v.Type {
		case formats.TypeString, formats.TypeJSON:
			h = murmur3(v.Bytes)
		default: // integers, dates and timestamps hash as a long
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(v.Int))
			h = murmur3(b[:])
		}
		return strconv.AppendInt(dst, int64((int32(h)&math.MaxInt32)%int32(f.n)), 10)
	case partTruncate:
		switch v.Type {
		case formats.TypeString, formats.TypeJSON:
			return appendString(dst, truncateRunes(v.Bytes, f.n))
		case formats.TypeInt32:
			x, w := int32(v.Int), int32(f.n)
			return strconv.AppendInt(dst, int64(x-((x%w)+w)%w), 10)
		default:
			x, w := v.Int, int64(f.n)
			return strconv.AppendInt(dst, x-((x%w)+w)%w, 10)
		}
	}
	switch v.Type {
	case formats.TypeString, formats.TypeJSON:
		return appendString(dst, v.Bytes)
	case formats.TypeDouble:
		return appendValue(dst, strconv.AppendFloat(tmp[:0], v.Float, 'g', -1, 64))
	case formats.TypeTimestamp:
		b := time.UnixMicro(v.Int).UTC().AppendFormat(tmp[:0], "2006-01-02T15:04:05.999999")
		return appendValue(dst, append(b, "+00:00"...))
	}
	// int64, int32, boolean and date render as AppendText renders them.
	return appendValue(dst, v.AppendText(tmp[:0]))
}

// appendString appends a string partition value; "null" is written
// "%6Eull", to keep its folder apart from the null partition's.
func appendString(dst []byte, b []byte) []byte {
	if string(b) == "null" {
		return append(dst, "%6Eull"...)
	}
	return appendValue(dst, b)
}

// truncateRunes returns the first w code points of b, as Iceberg's
// truncate counts them (a byte that is not UTF-8 counts as one).
func truncateRunes(b []byte, w int) []byte {
	for i := 0; i < len(b); w-- {
		if w == 0 {
			return b[:i]
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return b
}

// murmur3 is the 32-bit MurmurHash3 (x86) of b with seed 0, the hash of
// Iceberg's bucket transform.
func murmur3(b []byte) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	var h uint32
	n := len(b)
	for len(b) >= 4 {
		k := binary.LittleEndian.Uint32(b)
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
		b = b[4:]
	}
	var k uint32
	switch len(b) {
	case 3:
		k ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(b[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// MaxDirLen is the longest folder AppendDir renders, in bytes: every value
// takes at most pathtemplate.MaxValueLen bytes.
func (p *Partitioner) MaxDirLen() int {
	n := 0
	for i, f := range p.fields {
		if i > 0 {
			n++
		}
		n += len(f.name) + pathtemplate.MaxValueLen
	}
	return n
}

// appendValue appends a partition value to dst as Iceberg names it in a
// folder (url.QueryEscape), unless that name is longer than
// pathtemplate.MaxValueLen bytes or ends like a cut one ("~" and 16
// uppercase hex digits): such a value is appended as a path template
// appends it (pathtemplate.AppendEscaped), which percent-encodes "~" and
// " " and cuts a long value, ending it in "~" and the hash of the whole
// value. Distinct values keep distinct folders: a name url.QueryEscape
// makes never holds "%7E", which pathtemplate.AppendEscaped makes of every
// "~", and never ends like a cut one; a cut one holds "~", which an uncut
// pathtemplate.AppendEscaped never does. Every folder iceberg-go's
// PartitionSpec.PartitionToPath names within the bound, not ending like a
// cut one, is named as it names it.
func appendValue[T string | []byte](dst []byte, s T) []byte {
	n := 0
	for i := 0; i < len(s); i++ {
		if unreservedQuery(s[i]) || s[i] == ' ' {
			n++
		} else {
			n += 3
		}
	}
	if n > pathtemplate.MaxValueLen {
		return pathtemplate.AppendEscaped(dst, string(s))
	}
	start := len(dst)
	dst = appendQueryEscaped(dst, s)
	if looksCut(dst[start:]) {
		return pathtemplate.AppendEscaped(dst[:start], string(s))
	}
	return dst
}

// appendQueryEscaped appends s as url.QueryEscape escapes it.
func appendQueryEscaped[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case unreservedQuery(c):
			dst = append(dst, c)
		case c == ' ':
			dst = append(dst, '+')
		default:
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}

// looksCut reports whether an escaped value ends as one
// pathtemplate.AppendEscaped cut does: "~" and 16 uppercase hex digits.
func looksCut(v []byte) bool {
	const hashLen = 16
	if len(v) < hashLen+1 || v[len(v)-hashLen-1] != '~' {
		return false
	}
	for _, c := range v[len(v)-hashLen:] {
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// unreservedQuery reports whether url.QueryEscape leaves c as it is.
func unreservedQuery(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}
