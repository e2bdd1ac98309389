package iceberg

import (
	"fmt"
	"net/url"
	"time"

	"github.com/apache/iceberg-go"
)

// Partitioner renders the partition of a message's row as the folder its
// data file goes to, "<field>=<value>/...", the way Iceberg names
// partitions (PartitionSpec.PartitionToPath): a data file holds one
// partition, so the rows of one folder make one file. Partitions may use
// the envelope's stream, subject, sequence and timestamp columns: those
// are known for every message before its payload is read.
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
			dst = appendQueryEscaped(dst, stream)
		case f.kind == partIdentity && f.source == colSubject:
			dst = appendQueryEscaped(dst, subject)
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
			dst = appendQueryEscaped(dst, f.tr.ToHumanStrType(f.typ, v))
		}
	}
	return dst
}

// appendQueryEscaped appends s escaped as url.QueryEscape escapes it,
// without allocating when nothing needs escaping.
func appendQueryEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !unreservedQuery(s[i]) {
			return append(dst, url.QueryEscape(s)...)
		}
	}
	return append(dst, s...)
}

// unreservedQuery reports whether url.QueryEscape leaves c as it is.
func unreservedQuery(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}
