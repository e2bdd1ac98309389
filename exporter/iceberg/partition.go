package iceberg

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/jetlake/jetlake/pathtemplate"
)

// Partitioner renders the partition of a message's row as the folder its
// data file goes to, "<field>=<value>/...", the way Iceberg names
// partitions (PartitionSpec.PartitionToPath): a data file holds one
// partition, so the rows of one folder make one file. Partitions may use
// the envelope's stream, subject, sequence and timestamp columns: those
// are known for every message before its payload is read.
//
// A value Iceberg would name in more than pathtemplate.MaxValueLen bytes
// is named as a path template names it, cut with a hash of the whole value
// (see appendValue), so that any publisher's subject makes an object key
// S3 accepts. The folder is only where the file lies: readers take a
// file's partition from its manifest entry, which holds the whole value
// (iceberg-go reads it from the file's column statistics), never from its
// path.
type Partitioner struct {
	fields []partField
}

// partField is one field of the partition spec.
type partField struct {
	name   string // escaped, with "="
	source envelopeColumn
	kind   partKind
	tr     iceberg.Transform // for bucket and truncate
	typ    iceberg.Type      // the source column's
}

type envelopeColumn int

const (
	colStream envelopeColumn = iota
	colSubject
	colSequence
	colTimestamp
)

type partKind int

const (
	partIdentity partKind = iota
	partYear
	partMonth
	partDay
	partHour
	partOther // bucket and truncate, through iceberg-go's transforms
)

// NewPartitioner returns the Partitioner of spec over schema, or an error
// when a partition field's source is not an envelope column.
func NewPartitioner(schema *iceberg.Schema, spec iceberg.PartitionSpec) (*Partitioner, error) {
	p := &Partitioner{}
	for _, f := range spec.Fields() {
		if len(f.SourceIDs) != 1 {
			return nil, fmt.Errorf("partition field %s: want one source column", f.Name)
		}
		src, ok := schema.FindFieldByID(f.SourceIDs[0])
		if !ok {
			return nil, fmt.Errorf("partition field %s: no source column %d", f.Name, f.SourceIDs[0])
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
			return nil, fmt.Errorf("partition field %s: column %s is not one of stream, subject, sequence and timestamp", f.Name, src.Name)
		}
		switch f.Transform.(type) {
		case iceberg.IdentityTransform:
			pf.kind = partIdentity
			if pf.source != colStream && pf.source != colSubject {
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
		default:
			pf.kind = partOther
		}
		p.fields = append(p.fields, pf)
	}
	return p, nil
}

// AppendDir appends the partition folder of a row to dst.
func (p *Partitioner) AppendDir(dst []byte, stream, subject string, seq uint64, ts time.Time) []byte {
	ts = ts.UTC()
	for i, f := range p.fields {
		if i > 0 {
			dst = append(dst, '/')
		}
		dst = append(dst, f.name...)
		switch {
		case f.kind == partIdentity && f.source == colStream:
			dst = appendValue(dst, stream)
		case f.kind == partIdentity && f.source == colSubject:
			dst = appendValue(dst, subject)
		case f.kind == partHour:
			dst = ts.AppendFormat(dst, "2006-01-02-15")
		case f.kind == partDay:
			dst = ts.AppendFormat(dst, "2006-01-02")
		case f.kind == partMonth:
			dst = ts.AppendFormat(dst, "2006-01")
		case f.kind == partYear:
			dst = ts.AppendFormat(dst, "2006")
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
func appendValue(dst []byte, s string) []byte {
	n := 0
	for i := 0; i < len(s); i++ {
		if unreservedQuery(s[i]) || s[i] == ' ' {
			n++
		} else {
			n += 3
		}
	}
	if n > pathtemplate.MaxValueLen {
		return pathtemplate.AppendEscaped(dst, s)
	}
	start := len(dst)
	if n == len(s) && strings.IndexByte(s, ' ') < 0 {
		dst = append(dst, s...)
	} else {
		dst = append(dst, url.QueryEscape(s)...)
	}
	if looksCut(dst[start:]) {
		return pathtemplate.AppendEscaped(dst[:start], s)
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
