// Package formats encodes batches of JetStream messages into object bodies:
// json_lines, json_array, raw and parquet, the first three optionally
// compressed with gzip or zstd.
//
// The package is pure: it does no I/O, starts no goroutines and reads no
// clock. A Batch is filled one record at a time, so the size of the object
// is known (or, for compressed and parquet output, estimated) after every
// append and rotation can be decided on the bytes that will be written.
// The same records appended to a batch always give the same object, byte
// for byte, whatever the encoder encoded before.
//
// # JSON records
//
// With Options.Metadata, each message becomes one JSON object whose fields
// always come in this order:
//
//	{"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z","headers":{"K":["v"]},"payload":{"id":1}}
//
// The timestamp is RFC 3339 in UTC with exactly nine fractional digits.
// "headers" is written only with Options.Headers and only when the message
// has headers; its keys are sorted so the same message always encodes to the
// same bytes. Without Options.Metadata a record is the payload alone.
//
// A payload that is one JSON value in valid UTF-8 is written as that value,
// with insignificant whitespace removed and nothing else changed: numbers and
// string contents, escapes included, keep their bytes, so no precision is
// lost and a re-upload is byte-identical. Any other payload is written as a
// base64 string (standard alphabet, padded) followed by
// "payload_encoding":"base64"; without metadata that is the object
// {"payload":"...","payload_encoding":"base64"}. An empty payload is null.
// Nesting deeper than 10000 levels counts as not JSON, as it does for
// encoding/json.
//
// With Options.ExactPayload, a JSON payload whose bytes its compacted value
// does not keep (it had whitespace between tokens, or it is the literal
// null, which reads back as an empty payload) is followed by
// "payload_original", the base64 of its exact bytes:
//
//	{"stream":"EVENTS","subject":"events.a","sequence":43,"timestamp":"2026-11-29T07:00:00.123456789Z","payload":{"id":1},"payload_original":"eyAiaWQiOiAxIH0K"}
//
// A payload that is compact already, the common case, is written as
// without the option.
//
// Stream names, subjects and headers are written as JSON strings. Bytes that
// are not valid UTF-8 become U+FFFD, as encoding/json does, since a JSON
// string cannot hold them.
//
// json_lines ends every record with "\n" and is what Athena's JSON SerDe and
// Trino read. json_array writes the records as the elements of one array,
// "[]" when empty; DuckDB and Spark read it, Athena does not.
//
// # Raw
//
// The raw format writes each message's data followed by
// Options.RawDelimiter; metadata and headers are not written.
//
// # Compression of json_lines, json_array and raw
//
// With Options.Compression set to Gzip or Zstd the body is compressed, the
// extension gets ".gz" or ".zst" ("jsonl.gz", "json.zst", "bin.gz") and the
// content type is application/gzip or application/zstd. No Content-Encoding
// is implied: clients download the compressed object as it is.
//
// A batch compresses its records in chunks of about 256 KiB as they arrive,
// always keeping the record appended last uncompressed so that DropLast
// works, so a batch holds little more memory than its object will have:
// the compressed bytes, a buffer of up to 512 KiB for the records not
// compressed yet (for records below 256 KiB) and, for gzip, a 32 KiB
// dictionary.
// gzip output is one gzip member (RFC 1952) with no name and a zero
// modification time: each chunk is deflated at level 6 with the previous
// 32 KiB as its dictionary and ends with a sync flush, as pigz does. zstd
// output is one zstd frame per chunk (RFC 8878: a stream is any number of
// frames, decoded as one), at the default level, with content checksums.
//
// Size is exact for the chunks compressed so far; the uncompressed rest is
// estimated with the compression ratio of the batch's earlier chunks, or,
// before its first chunk, the ratio the encoder saw last. Objects of 1 MiB
// and more land within a few percent of the size limit.
//
// # Bodies and memory
//
// Finish returns a Body: the bytes of the object in the pieces the batch
// wrote them in, never copied into one slice. Encoded records, compressed
// streams and parquet files are kept in chunks that are never reallocated:
// a batch's first chunk has 512 bytes, each next one twice as many up to
// 1 MiB.
// Chunks come from pools shared by all batches and go back to them in
// Reset, so a program that fills, finishes and resets batches does not
// allocate for them once it runs steadily. A Body is valid until its
// batch's Reset; Body.NewReader reads it for an upload, with Seek and
// ReadAt for checksums and retries.
//
// # Parquet
//
// The Parquet format writes one row per message, in these columns (Fields
// lists them for given Options):
//
//	stream          BYTE_ARRAY STRING, required, dictionary-encoded
//	subject         BYTE_ARRAY STRING, required, dictionary-encoded
//	sequence        INT64, required
//	timestamp       INT64 TIMESTAMP(MICROS, isAdjustedToUTC=true), required
//	headers         BYTE_ARRAY STRING (JSON text), optional; only with Options.Headers
//	typed columns   optional, in the order of Options.Columns (see Column)
//	payload         BYTE_ARRAY STRING, optional; not with Options.OmitPayload
//	payload_base64  BYTE_ARRAY STRING, optional; not with Options.OmitPayload
//
// The envelope columns stream, subject, sequence and timestamp are written
// whatever Options.Metadata says: a query needs them to tell messages apart
// without partitions. The timestamp has microsecond precision (Athena cannot
// read nanoseconds); the digits below a microsecond are dropped. A sequence
// above 2^63-1 cannot be written: Append returns an error.
//
// headers holds the message headers as JSON text with sorted keys, each
// value a list, {"Nats-Msg-Id":["o-1"]}, or null when the message has none:
// parquet-go's generic writer silently loses the values of a map of lists,
// and json_extract reads a JSON string anyway.
//
// Typed columns take their values from fields of JSON payloads, converted
// as Column describes. A value of the wrong type makes Append return a
// *TypeError and leave the batch unchanged, or, with Options.OnTypeError
// set to NullTypeErrors, makes the column null.
//
// payload holds the message data as text: the compacted JSON when the data
// is one JSON value in valid UTF-8 (as the JSON formats write it), the data
// itself when it is valid UTF-8 but not JSON, null otherwise.
// payload_base64 holds the base64 (standard, padded) of data that is not
// valid UTF-8, and is null otherwise. Empty data leaves both null. Bytes of
// stream names, subjects and headers that are not valid UTF-8 become
// U+FFFD.
//
// Files have data pages v1 (the most widely readable), PLAIN encoding for
// every column but stream and subject, Options.Compression (Snappy by
// default; Zstd, Gzip or None), column chunk statistics and a page index
// (with bounds truncated to 16 bytes), and no page header statistics, which
// would repeat each page's smallest and largest value four times. The
// payload, payload_base64, headers and json columns have no bounds at all:
// they mean nothing there and would copy whole payloads into the footer.
// The file's created_by is "jetlake" and it has no key-value metadata, so
// the same records always give the same bytes.
//
// A batch buffers the column values and writes the file in Finish. Row
// groups end when their column values, PLAIN-encoded and uncompressed,
// reach Options.RowGroupSize: counting before compression keeps the
// boundaries, and so the bytes, the same for the same records. Size
// estimates the file from the sizes of the values and the compression
// ratios of samples: each batch compresses the last 256 KiB of every column
// when its values reach 64 KiB, 512 KiB, 4 MiB and so on (eight times more
// each time), and the encoder learns from every finished file how samples
// compare with column chunks and how much the footer takes. A batch holds
// its values uncompressed, so MemSize is some times Size.
package formats

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Format names an output format.
type Format string

// The output formats.
const (
	JSONLines Format = "json_lines"
	JSONArray Format = "json_array"
	Raw       Format = "raw"
	Parquet   Format = "parquet"
)

// Compression names a compression codec.
type Compression string

// The compression codecs. The empty Compression is the format's default:
// Snappy for Parquet, None for the others. Snappy is for Parquet only.
const (
	None   Compression = "none"
	Gzip   Compression = "gzip"
	Zstd   Compression = "zstd"
	Snappy Compression = "snappy"
)

// TypeErrorPolicy says what a parquet batch does with a value of the wrong
// type for its typed column.
type TypeErrorPolicy string

// The type error policies. The empty policy is RejectTypeErrors.
const (
	// RejectTypeErrors makes Batch.Append return a *TypeError and leave the
	// batch unchanged.
	RejectTypeErrors TypeErrorPolicy = "reject"
	// NullTypeErrors writes null in the column and appends the record.
	NullTypeErrors TypeErrorPolicy = "null"
)

// DefaultRowGroupSize is the parquet row group size when
// Options.RowGroupSize is zero.
const DefaultRowGroupSize = 64 << 20

// Record is one message to encode. The encoder does not retain the record or
// any slice it points to after Append returns.
type Record struct {
	Stream   string
	Subject  string
	Sequence uint64
	Time     time.Time // JetStream timestamp; written in UTC
	Headers  map[string][]string
	Data     []byte
}

// Options configure an Encoder. The zero value writes uncompressed
// json_lines records with no metadata.
type Options struct {
	Format       Format      // empty means JSONLines
	Compression  Compression // empty means Snappy for Parquet, None otherwise
	Metadata     bool        // JSON formats: write stream, subject, sequence and timestamp around the payload
	Headers      bool        // JSON formats: with Metadata, write headers when the message has some; Parquet: add the headers column
	RawDelimiter []byte      // raw format only: written after every message

	// ExactPayload is for json_lines and json_array with Metadata only
	// (keep_exact_payload); New rejects it otherwise. A payload written as
	// its JSON value whose bytes that value does not keep (whitespace
	// between its tokens, or the literal null, which an empty payload
	// writes too) also gets "payload_original", the base64 of its exact
	// bytes, so that ReadRecords gives every payload back byte for byte.
	// Parquet has no such option: its payload column holds a JSON payload
	// compacted.
	ExactPayload bool

	// DeferCompression leaves the compression of gzip and zstd JSON and
	// raw batches to the caller, who takes the chunks from the encoder, a
	// ChunkSource, and compresses them on other goroutines (see Chunk).
	DeferCompression bool

	// TargetSize is the size batches are cut at, 0 if unknown. With
	// gzip or zstd, a JSON or raw record of a quarter of it or more (or of
	// a quarter chunk, when unknown) is compressed once more on its own
	// to measure it, so that Size says exactly whether it fits: a
	// compression ratio learned from other records can be far off for it.
	TargetSize int64

	// The fields below are for Parquet only; New rejects Columns,
	// RowGroupSize and OmitPayload for other formats.

	RowGroupSize int64           // bytes of column values before encoding and compression; 0 means DefaultRowGroupSize
	OmitPayload  bool            // leave out the payload and payload_base64 columns (keep_payload = false)
	OnTypeError  TypeErrorPolicy // empty means RejectTypeErrors; other formats check it and ignore it
	Columns      []Column        // typed columns extracted from JSON payloads, in this order after the envelope
	// FieldIDs gives each column, by name, the field id an Iceberg
	// table's schema has for it; nil writes none. PositionalFieldIDs are
	// the ids of a table created from Fields; a table whose schema evolved
	// has its own.
	FieldIDs map[string]int
}

// PositionalFieldIDs returns field ids by position in fields, from 1: the
// ids of an Iceberg table created with these fields.
func PositionalFieldIDs(fields []Field) map[string]int {
	ids := make(map[string]int, len(fields))
	for i, f := range fields {
		ids[f.Name] = i + 1
	}
	return ids
}

// Encoder makes batches of one format. It is safe for concurrent use, and
// its batches may be filled and finished in different goroutines.
type Encoder interface {
	// Ext is the object key extension without the dot: "jsonl", "json",
	// "bin", "parquet", or with compression "jsonl.gz", "json.zst", ...
	// ObjectType returns it, and ContentType, without an encoder.
	Ext() string
	// ContentType is the object's Content-Type. Compressed JSON and raw
	// objects are application/gzip or application/zstd; they carry no
	// Content-Encoding.
	ContentType() string
	// NewBatch returns an empty batch.
	NewBatch() Batch
}

// Batch accumulates the records of one object. A Batch is not safe for
// concurrent use.
type Batch interface {
	// Append encodes r at the end of the batch. An error means the record
	// cannot be encoded in this format; the batch is unchanged. The error
	// is a *TypeError when a typed parquet column rejects a value. After
	// Finish, Append returns ErrFinished until Reset.
	Append(r *Record) error
	// Len is the number of records appended.
	Len() int
	// Size is the size in bytes of the object Finish would return now:
	// exact for uncompressed JSON and raw output, an estimate for compressed
	// and parquet output, exact again after Finish. It is cheap: callers
	// may call it after every Append. It changes only in Append, DropLast,
	// Finish and Reset.
	Size() int
	// MemSize is the number of bytes of memory the batch holds for its
	// records: the capacity of the chunks of encoded and compressed bytes,
	// of the buffer of records not yet compressed and of the compressor's
	// dictionary, and buffered column values. For uncompressed JSON and
	// raw output with records it is at least Size and at most Size plus
	// 1 MiB, the largest chunk; a batch without records holds nothing
	// until Finish. It changes only in Append, DropLast, Finish and Reset.
	MemSize() int
	// Finish returns the object body. The Body is the batch's memory: it
	// is valid until Reset and must not be modified; the batch must not be
	// appended to after Finish. Calling Finish again returns the same
	// body. An error means the body could not be encoded; it is returned
	// again by later calls.
	Finish() (Body, error)
	// DropLast removes the record appended last, for a caller that finds
	// it does not fit. It may only be called once after a successful Append
	// and before Finish. Size and MemSize return what they returned before
	// that Append, so a caller keeping totals by differences stays exact.
	DropLast()
	// Reset empties the batch and gives its chunks back to pools shared
	// by all batches, for reuse; a Body it returned is not valid anymore.
	// A batch that is dropped without Reset leaves its memory to the
	// garbage collector.
	Reset()
}

// ErrFinished is returned by Batch.Append after Finish and before Reset.
var ErrFinished = errors.New("formats: append to a finished batch")

// New returns an Encoder for opts, or an error naming the first option that
// is not valid: an unknown format or compression, a compression the format
// does not take, parquet options for another format, or a typed column that
// is not valid (see Column). The encoder keeps a copy of opts.
func New(opts Options) (Encoder, error) {
	opts, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.ExactPayload && opts.Format != JSONLines && opts.Format != JSONArray:
		return nil, fmt.Errorf("formats: an exact payload needs the %s or %s format, not %s", JSONLines, JSONArray, opts.Format)
	case opts.ExactPayload && !opts.Metadata:
		return nil, fmt.Errorf("formats: an exact payload needs Metadata: without it a record is the payload alone")
	}
	if opts.Format == Parquet {
		return newParquetEncoder(opts)
	}
	switch {
	case len(opts.Columns) > 0:
		return nil, fmt.Errorf("formats: typed columns need the %s format, not %s", Parquet, opts.Format)
	case opts.RowGroupSize != 0:
		return nil, fmt.Errorf("formats: a row group size needs the %s format, not %s", Parquet, opts.Format)
	case opts.OmitPayload:
		return nil, fmt.Errorf("formats: omitting the payload needs the %s format, not %s", Parquet, opts.Format)
	case opts.FieldIDs != nil:
		return nil, fmt.Errorf("formats: field ids need the %s format, not %s", Parquet, opts.Format)
	}
	if err := checkPolicy(opts.OnTypeError); err != nil {
		return nil, err
	}
	e := &encoder{opts: opts}
	e.ext, e.contentType = objectType(opts)
	switch opts.Compression {
	case Gzip:
		e.codec = newGzipChunker()
	case Zstd:
		c, err := newZstdChunker()
		if err != nil {
			return nil, err
		}
		e.codec = c
	}
	if e.codec != nil && opts.DeferCompression {
		e.queue = &chunkQueue{}
	}
	// The caller may reuse its slice; the encoder must not change under
	// batches that other goroutines fill.
	e.opts.RawDelimiter = append([]byte(nil), opts.RawDelimiter...)
	e.opts.Columns = nil
	if e.queue != nil {
		return deferringEncoder{e}, nil
	}
	return e, nil
}

// ObjectType returns the object key extension, without the dot, and the
// Content-Type of the objects an Encoder for opts writes: what its Ext and
// ContentType return, without making one. The error is New's for an unknown
// format or a compression the format does not take; the other options are
// not checked.
func ObjectType(opts Options) (ext, contentType string, err error) {
	opts, err = resolve(opts)
	if err != nil {
		return "", "", err
	}
	ext, contentType = objectType(opts)
	return ext, contentType, nil
}

// objectType is ObjectType for options that resolve returned.
func objectType(opts Options) (ext, contentType string) {
	switch opts.Format {
	case Parquet:
		// Parquet compresses inside the file: the object is parquet whatever
		// the codec.
		return "parquet", "application/vnd.apache.parquet"
	case JSONArray:
		ext, contentType = "json", "application/json"
	case Raw:
		ext, contentType = "bin", "application/octet-stream"
	default:
		ext, contentType = "jsonl", "application/x-ndjson"
	}
	switch opts.Compression {
	case Gzip:
		return ext + ".gz", "application/gzip"
	case Zstd:
		return ext + ".zst", "application/zstd"
	}
	return ext, contentType
}

// resolve returns opts with the empty format and compression replaced by
// their defaults, or an error when the format is unknown or does not take
// the compression.
func resolve(opts Options) (Options, error) {
	switch opts.Format {
	case "":
		opts.Format = JSONLines
	case JSONLines, JSONArray, Raw, Parquet:
	default:
		return opts, fmt.Errorf("formats: unknown format %q (want %q, %q, %q or %q)",
			string(opts.Format), JSONLines, JSONArray, Raw, Parquet)
	}
	if opts.Format == Parquet {
		switch opts.Compression {
		case "":
			opts.Compression = Snappy
		case Snappy, Zstd, Gzip, None:
		default:
			return opts, fmt.Errorf("formats: %s cannot be compressed with %q (want %q, %q, %q or %q)",
				Parquet, string(opts.Compression), Snappy, Zstd, Gzip, None)
		}
		return opts, nil
	}
	switch opts.Compression {
	case "":
		opts.Compression = None
	case None, Gzip, Zstd:
	default:
		return opts, fmt.Errorf("formats: %s cannot be compressed with %q (want %q, %q or %q)",
			opts.Format, string(opts.Compression), None, Gzip, Zstd)
	}
	return opts, nil
}

type encoder struct {
	opts        Options
	ext         string
	contentType string
	codec       chunker     // nil without compression
	queue       *chunkQueue // with a codec and Options.DeferCompression
}

// deferringEncoder is an encoder whose batches leave their chunks to be
// compressed by the caller: the Encoder New returns with compression and
// Options.DeferCompression, and the only one that is a ChunkSource.
type deferringEncoder struct{ *encoder }

// TakeChunks implements ChunkSource.
func (e deferringEncoder) TakeChunks(dst []*Chunk) []*Chunk { return e.queue.take(dst) }

func (e *encoder) Ext() string         { return e.ext }
func (e *encoder) ContentType() string { return e.contentType }

func (e *encoder) NewBatch() Batch {
	b := &batch{opts: &e.opts, codec: e.codec, queue: e.queue}
	b.Reset()
	return b
}

// checkPolicy returns an error when p is not a TypeErrorPolicy.
func checkPolicy(p TypeErrorPolicy) error {
	switch p {
	case "", RejectTypeErrors, NullTypeErrors:
		return nil
	}
	return fmt.Errorf("formats: unknown type error policy %q (want %q or %q)", string(p), RejectTypeErrors, NullTypeErrors)
}

// columnName is what a typed column may be called: a lower-case SQL
// identifier that Athena, Trino and DuckDB take without quoting.
var columnName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
