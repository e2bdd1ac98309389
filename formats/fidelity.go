package formats

import "strings"

// Fidelity is what ReadRecords gives back of the messages in objects
// written with some Options, and so what a restore of them publishes.
type Fidelity struct {
	// Restorable is set when the records carry each message's stream,
	// subject and sequence and its payload; NotWhy says why not otherwise.
	Restorable bool
	NotWhy     string
	// Headers is set when the records carry the messages' headers.
	Headers bool
	// ExactJSON is set when a JSON payload comes back byte for byte;
	// otherwise it comes back compacted (whitespace between tokens
	// removed; the literal null as an empty payload). Every other payload
	// comes back byte for byte.
	ExactJSON bool
	// CanKeepExactJSON is set when Options.ExactPayload would set
	// ExactJSON: the JSON formats with Options.Metadata.
	CanKeepExactJSON bool
}

// RestoreFidelity returns the Fidelity of the objects an encoder for opts
// writes. opts is not checked; New does that.
func RestoreFidelity(opts Options) Fidelity {
	switch opts.Format {
	case Raw:
		return Fidelity{NotWhy: "raw objects hold payloads without subjects or sequences"}
	case Parquet:
		if opts.OmitPayload {
			return Fidelity{NotWhy: "the parquet files hold no payloads (keep_payload = false)"}
		}
		return Fidelity{Restorable: true, Headers: opts.Headers}
	}
	if !opts.Metadata {
		return Fidelity{NotWhy: "the records are payloads without subjects or sequences (include_metadata = false)"}
	}
	return Fidelity{
		Restorable:       true,
		Headers:          opts.Headers,
		ExactJSON:        opts.ExactPayload,
		CanKeepExactJSON: true,
	}
}

// String says in one line, naming the connector keys, what comes back:
// "messages come back with subjects, headers and payloads byte for byte",
// or "not possible: " and why.
func (f Fidelity) String() string {
	if !f.Restorable {
		return "not possible: " + f.NotWhy
	}
	var b strings.Builder
	switch {
	case f.ExactJSON && f.Headers:
		b.WriteString("messages come back with subjects, headers and payloads byte for byte")
	case f.ExactJSON:
		b.WriteString("messages come back with subjects and payloads byte for byte")
	case f.Headers:
		b.WriteString("messages come back with subjects and headers")
	default:
		b.WriteString("messages come back with subjects")
	}
	switch {
	case f.ExactJSON:
	case f.CanKeepExactJSON:
		b.WriteString("; JSON payloads come back compacted (keep_exact_payload = true keeps their bytes), other payloads byte for byte")
	default:
		b.WriteString("; JSON payloads come back compacted (as the parquet payload column holds them), other payloads byte for byte")
	}
	if !f.Headers {
		b.WriteString("; headers are not kept (include_headers = false)")
	}
	return b.String()
}
