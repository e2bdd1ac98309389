// Package formats encodes batches of JetStream messages into object bodies:
// json_lines, json_array and raw.
//
// The package is pure: it does no I/O, starts no goroutines and reads no
// clock. A Batch is filled one record at a time, so the encoded size is known
// after every append and rotation can be decided on the bytes that will be
// written.
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
package formats

import (
	"errors"
	"fmt"
	"time"
)

// Format names an output format.
type Format string

// The output formats.
const (
	JSONLines Format = "json_lines"
	JSONArray Format = "json_array"
	Raw       Format = "raw"
)

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

// Options configure an Encoder. The zero value writes json_lines records with
// no metadata.
type Options struct {
	Format       Format // empty means JSONLines
	Metadata     bool   // write stream, subject, sequence and timestamp around the payload
	Headers      bool   // with Metadata: write headers when the message has some; ignored otherwise
	RawDelimiter []byte // raw format only: written after every message
}

// Encoder makes batches of one format. It is safe for concurrent use.
type Encoder interface {
	// Ext is the object key extension without the dot: "jsonl", "json", "bin".
	Ext() string
	// ContentType is the object's Content-Type.
	ContentType() string
	// NewBatch returns an empty batch.
	NewBatch() Batch
}

// Batch accumulates the encoded records of one object. A Batch is not safe
// for concurrent use.
type Batch interface {
	// Append encodes r at the end of the batch. An error means the record can
	// never be encoded in this format; the batch is unchanged. After Finish,
	// Append returns ErrFinished until Reset.
	Append(r *Record) error
	// Len is the number of records appended.
	Len() int
	// Size is the size in bytes of the object Finish would return now.
	Size() int
	// Finish returns the object body. The slice is valid until Reset; the
	// batch must not be appended to after Finish. Calling Finish again
	// returns the same bytes.
	Finish() ([]byte, error)
	// DropLast removes the record appended last, for a caller that finds
	// it does not fit. It may only be called once after a successful Append
	// and before Finish.
	DropLast()
	// Reset empties the batch, keeping its memory for reuse.
	Reset()
}

// ErrFinished is returned by Batch.Append after Finish and before Reset.
var ErrFinished = errors.New("formats: append to a finished batch")

// New returns an Encoder for opts.Format, or an error naming the format when
// it is not one of JSONLines, JSONArray and Raw. An empty Format means
// JSONLines. The encoder keeps a copy of opts.
func New(opts Options) (Encoder, error) {
	e := &encoder{opts: opts}
	switch opts.Format {
	case "", JSONLines:
		e.opts.Format = JSONLines
		e.ext, e.contentType = "jsonl", "application/x-ndjson"
	case JSONArray:
		e.ext, e.contentType = "json", "application/json"
	case Raw:
		e.ext, e.contentType = "bin", "application/octet-stream"
	default:
		return nil, fmt.Errorf("formats: unknown format %q (want %q, %q or %q)",
			string(opts.Format), JSONLines, JSONArray, Raw)
	}
	// The caller may reuse its slice; the encoder must not change under
	// batches that other goroutines fill.
	e.opts.RawDelimiter = append([]byte(nil), opts.RawDelimiter...)
	return e, nil
}

type encoder struct {
	opts        Options
	ext         string
	contentType string
}

func (e *encoder) Ext() string         { return e.ext }
func (e *encoder) ContentType() string { return e.contentType }

func (e *encoder) NewBatch() Batch {
	b := &batch{opts: &e.opts}
	b.Reset()
	return b
}
