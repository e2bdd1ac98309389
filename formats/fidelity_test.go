package formats

import (
	"bytes"
	"testing"
)

func TestRestoreFidelity(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want Fidelity
		line string
	}{
		{"json_lines with headers and exact payloads",
			Options{Format: JSONLines, Metadata: true, Headers: true, ExactPayload: true},
			Fidelity{Restorable: true, Headers: true, ExactJSON: true, CanKeepExactJSON: true},
			"messages come back with subjects, headers and payloads byte for byte"},
		{"json_array with exact payloads, without headers",
			Options{Format: JSONArray, Compression: Gzip, Metadata: true, ExactPayload: true},
			Fidelity{Restorable: true, ExactJSON: true, CanKeepExactJSON: true},
			"messages come back with subjects and payloads byte for byte; headers are not kept (include_headers = false)"},
		{"json_lines with headers",
			Options{Metadata: true, Headers: true},
			Fidelity{Restorable: true, Headers: true, CanKeepExactJSON: true},
			"messages come back with subjects and headers; JSON payloads come back compacted (keep_exact_payload = true keeps their bytes), other payloads byte for byte"},
		{"json_lines, the defaults of a connector",
			Options{Format: JSONLines, Metadata: true},
			Fidelity{Restorable: true, CanKeepExactJSON: true},
			"messages come back with subjects; JSON payloads come back compacted (keep_exact_payload = true keeps their bytes), other payloads byte for byte; headers are not kept (include_headers = false)"},
		{"json_array without metadata",
			Options{Format: JSONArray, Headers: true},
			Fidelity{NotWhy: "the records are payloads without subjects or sequences (include_metadata = false)"},
			"not possible: the records are payloads without subjects or sequences (include_metadata = false)"},
		{"raw",
			Options{Format: Raw, Compression: Zstd, Metadata: true},
			Fidelity{NotWhy: "raw objects hold payloads without subjects or sequences"},
			"not possible: raw objects hold payloads without subjects or sequences"},
		{"parquet with headers",
			Options{Format: Parquet, Headers: true},
			Fidelity{Restorable: true, Headers: true},
			"messages come back with subjects and headers; JSON payloads come back compacted (as the parquet payload column holds them), other payloads byte for byte"},
		{"parquet, whatever Metadata says",
			Options{Format: Parquet, Compression: Zstd, Columns: []Column{{Name: "id", Source: "id", Type: TypeInt64}}},
			Fidelity{Restorable: true},
			"messages come back with subjects; JSON payloads come back compacted (as the parquet payload column holds them), other payloads byte for byte; headers are not kept (include_headers = false)"},
		{"parquet without payloads",
			Options{Format: Parquet, Headers: true, OmitPayload: true},
			Fidelity{NotWhy: "the parquet files hold no payloads (keep_payload = false)"},
			"not possible: the parquet files hold no payloads (keep_payload = false)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RestoreFidelity(tt.opts)
			if got != tt.want {
				t.Errorf("RestoreFidelity = %+v, want %+v", got, tt.want)
			}
			if got.String() != tt.line {
				t.Errorf("String() =\n%q, want\n%q", got.String(), tt.line)
			}
		})
	}
}

// What RestoreFidelity says is what ReadRecords does: the records of a
// restorable encoding read back with or without their headers, JSON
// payloads exact or compacted as it says; the others do not read back.
func TestRestoreFidelityIsWhatReadRecordsGives(t *testing.T) {
	written := recordsToRestore()
	all := append(restoreEncodings(),
		Options{Format: JSONLines},
		Options{Format: Raw},
		Options{Format: Parquet, OmitPayload: true, Columns: allTypes})
	for _, opts := range all {
		t.Run(restoreName(opts), func(t *testing.T) {
			f := RestoreFidelity(opts)
			got, err := readAll(t, objectKey(t, opts), encodeBody(t, opts, written...))
			if !f.Restorable {
				if err == nil {
					t.Fatalf("%d records read back of %q", len(got), f)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			headers, exact := false, true
			for i, r := range written {
				headers = headers || got[i].Headers != nil
				if !bytes.Equal(got[i].Data, r.Data) {
					exact = false
				}
			}
			if headers != f.Headers || exact != f.ExactJSON {
				t.Errorf("headers %v, payloads exact %v; RestoreFidelity says %+v", headers, exact, f)
			}
		})
	}
}
