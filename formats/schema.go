package formats

// Field is one column of the records an encoder writes: a column of a
// parquet file, or a member of a JSON record. Fields describes them for
// whoever declares a table over the objects.
type Field struct {
	Name string
	// Type is the field's logical type. The envelope fields are TypeString,
	// TypeInt64, TypeTimestamp (RFC 3339 text with nine fractional digits
	// in JSON records, TIMESTAMP(MICROS, isAdjustedToUTC=true) in parquet)
	// and TypeJSON (a JSON value in JSON records, its text in parquet).
	Type ColumnType
	// Optional is set for a field that may be null or, in a JSON record,
	// absent.
	Optional bool
	// Typed is set for the typed columns of Options.Columns, whose values
	// come from the payload; the other fields are the envelope.
	Typed bool

	// How parquet writes the column.
	dict bool // dictionary-encoded: few distinct values
	blob bool // no min and max: they mean nothing there and may be large
}

// The envelope fields, in the order they are written. Parquet files and JSON
// records start alike and differ in how they hold the payload.
var (
	envelopeHead = []Field{
		{Name: "stream", Type: TypeString, dict: true},
		{Name: "subject", Type: TypeString, dict: true},
		{Name: "sequence", Type: TypeInt64},
		{Name: "timestamp", Type: TypeTimestamp},
	}
	headersField = Field{Name: "headers", Type: TypeJSON, Optional: true, blob: true}
	// jsonPayload is the payload as JSON, or as base64 text marked by
	// payload_encoding; null when empty.
	jsonPayload = []Field{
		{Name: "payload", Type: TypeJSON, Optional: true},
		{Name: "payload_encoding", Type: TypeString, Optional: true},
	}
	// payloadOriginal is the base64 of a JSON payload's exact bytes, with
	// Options.ExactPayload, where its compacted value does not keep them.
	payloadOriginal = Field{Name: "payload_original", Type: TypeString, Optional: true}
	// parquetPayload holds text in payload and anything else in
	// payload_base64.
	parquetPayload = []Field{
		{Name: "payload", Type: TypeString, Optional: true, blob: true},
		{Name: "payload_base64", Type: TypeString, Optional: true, blob: true},
	}
)

// Fields returns the fields of the records an encoder for opts writes, in
// the order they are written: stream, subject, sequence, timestamp, headers
// with Options.Headers, then for JSON records payload and payload_encoding
// (and payload_original with Options.ExactPayload), for parquet files the typed columns of Options.Columns and, unless
// Options.OmitPayload, payload and payload_base64. Records of the raw
// format, and JSON records without Options.Metadata (the payload alone),
// have no fields: Fields returns nil. opts is not checked; New does that.
func Fields(opts Options) []Field {
	switch opts.Format {
	case Raw:
		return nil
	case Parquet:
	default:
		if !opts.Metadata {
			return nil
		}
	}
	fields := append([]Field(nil), envelopeHead...)
	if opts.Headers {
		fields = append(fields, headersField)
	}
	if opts.Format != Parquet {
		fields = append(fields, jsonPayload...)
		if opts.ExactPayload {
			fields = append(fields, payloadOriginal)
		}
		return fields
	}
	for _, c := range opts.Columns {
		fields = append(fields, Field{Name: c.Name, Type: c.Type, Optional: true, Typed: true, blob: c.Type == TypeJSON})
	}
	if !opts.OmitPayload {
		fields = append(fields, parquetPayload...)
	}
	return fields
}

// EnvelopeNames returns the names of the envelope columns a parquet file
// may have, in file order. Typed columns cannot take them, whether or not a
// file has the column.
func EnvelopeNames() []string {
	fields := Fields(Options{Format: Parquet, Headers: true})
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return names
}
