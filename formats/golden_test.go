package formats

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenRecords is a fixed batch that touches every encoding rule.
func goldenRecords() []*Record {
	cet := time.FixedZone("CET", 3600)
	return []*Record{
		{Stream: "ORDERS", Subject: "orders.created", Sequence: 1,
			Time:    time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC),
			Headers: map[string][]string{"Nats-Msg-Id": {"o-1"}, "Content-Type": {"application/json"}},
			Data:    []byte(`{"id": 1, "items": [ {"sku": "A-1", "qty": 2} ], "total": 19.90}`)},
		{Stream: "ORDERS", Subject: "orders.updated", Sequence: 7,
			Time: time.Date(2026, 11, 29, 8, 0, 0, 1, cet),
			Data: []byte("{\n  \"id\": 123456789012345678901234567890,\n  \"ratio\": 1.0e400,\n  \"note\": \"caf\\u00e9 \\\"quoted\\\" é\"\n}\n")},
		{Stream: "ORDERS", Subject: "orders.\"odd\".\\subject\t", Sequence: 8,
			Time:    time.Date(2026, 11, 29, 7, 59, 59, 999999999, time.UTC),
			Headers: map[string][]string{"X-Trace": {"b", "a"}, "X-Bin": {"\x00\xff"}},
			Data:    []byte("plain text, not JSON\n")},
		{Stream: "ORDERS", Subject: "orders.empty", Sequence: 9,
			Time: time.Date(2026, 11, 29, 7, 0, 1, 500000000, time.UTC)},
		{Stream: "ORDERS", Subject: "orders.scalar", Sequence: 10,
			Time: time.Date(2026, 11, 29, 7, 0, 2, 0, time.UTC),
			Data: []byte(` "just a string" `)},
		{Stream: "ORDERS", Subject: "orders.binary", Sequence: 12,
			Time: time.Date(2026, 11, 29, 7, 0, 3, 0, time.UTC),
			Data: []byte("\x89PNG\r\n\x1a\n\x00\x00")},
		{Stream: "ORDERS", Subject: "orders.日本", Sequence: 18446744073709551615,
			Time: time.Date(2026, 11, 29, 7, 0, 4, 40, time.UTC),
			Data: []byte(`[[], {}, [1, [2, [3]]], null, true, false, -0.5e-3]`)},
	}
}

func TestGolden(t *testing.T) {
	parquetColumns := []Column{
		{Name: "id", Source: "id", Type: TypeInt64},
		{Name: "first_sku", Source: "items.0.sku", Type: TypeString},
		{Name: "total", Source: "total", Type: TypeDouble},
		{Name: "note", Source: "note", Type: TypeJSON},
	}
	tests := []struct {
		file string
		opts Options
	}{
		{"json_lines.golden", Options{Format: JSONLines, Metadata: true, Headers: true}},
		{"json_lines_payload_only.golden", Options{Format: JSONLines}},
		{"json_array.golden", Options{Format: JSONArray, Metadata: true, Headers: true}},
		{"json_lines_exact.golden", Options{Format: JSONLines, Metadata: true, Headers: true, ExactPayload: true}},
		{"json_array_exact.golden", Options{Format: JSONArray, Metadata: true, ExactPayload: true}},
		{"raw.golden", Options{Format: Raw, RawDelimiter: []byte("\n")}},
		{"json_lines.gz.golden", Options{Format: JSONLines, Compression: Gzip, Metadata: true, Headers: true}},
		{"json_lines.zst.golden", Options{Format: JSONLines, Compression: Zstd, Metadata: true, Headers: true}},
		{"json_array.gz.golden", Options{Format: JSONArray, Compression: Gzip, Metadata: true, Headers: true}},
		{"json_array.zst.golden", Options{Format: JSONArray, Compression: Zstd, Metadata: true, Headers: true}},
		{"raw.gz.golden", Options{Format: Raw, Compression: Gzip, RawDelimiter: []byte("\n")}},
		{"raw.zst.golden", Options{Format: Raw, Compression: Zstd, RawDelimiter: []byte("\n")}},
		{"parquet_snappy.golden", Options{Format: Parquet, Headers: true, Columns: parquetColumns, OnTypeError: NullTypeErrors}},
		{"parquet_zstd.golden", Options{Format: Parquet, Compression: Zstd, Headers: true, Columns: parquetColumns, OnTypeError: NullTypeErrors}},
		{"parquet_gzip.golden", Options{Format: Parquet, Compression: Gzip, Headers: true, Columns: parquetColumns, OnTypeError: NullTypeErrors}},
		{"parquet_none.golden", Options{Format: Parquet, Compression: None, Headers: true, Columns: parquetColumns, OnTypeError: NullTypeErrors}},
		{"parquet_no_payload.golden", Options{Format: Parquet, OmitPayload: true, Columns: parquetColumns, OnTypeError: NullTypeErrors}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			records := goldenRecords()
			if tt.opts.Format == Parquet {
				// Parquet sequences are INT64.
				records[len(records)-1].Sequence = math.MaxInt64
			}
			got := encodeBody(t, tt.opts, records...)
			switch {
			case tt.opts.Format == Parquet:
				pf := readParquet(t, got)
				want := map[Compression]string{"": "SNAPPY", Snappy: "SNAPPY", Zstd: "ZSTD", Gzip: "GZIP", None: "UNCOMPRESSED"}[tt.opts.Compression]
				for _, c := range pf.Codecs {
					if c != want {
						t.Fatalf("column chunks are compressed with %v, want %s", pf.Codecs, want)
					}
				}
				if len(pf.Rows) != len(records) {
					t.Fatalf("%d rows, want %d", len(pf.Rows), len(records))
				}
				for i, r := range records {
					if pf.Rows[i]["sequence"] != int64(r.Sequence) {
						t.Errorf("row %d: sequence %v, want %d", i, pf.Rows[i]["sequence"], r.Sequence)
					}
				}
			case tt.opts.Compression != None && tt.opts.Compression != "":
				plain := tt.opts
				plain.Compression = None
				if !bytes.Equal(decompress(t, tt.opts.Compression, got), encodeBody(t, plain, records...)) {
					t.Errorf("the body does not decompress to the uncompressed body")
				}
			case tt.opts.Format != Raw:
				checkRoundTrip(t, tt.opts, records, got)
			}
			path := filepath.Join("testdata", tt.file)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				if utf8.Valid(want) {
					t.Errorf("body differs from %s (run go test -update if the change is intended):\ngot:\n%s\nwant:\n%s", path, got, want)
				} else {
					t.Errorf("body (%d bytes) differs from %s (%d bytes); run go test -update if the change is intended", len(got), path, len(want))
				}
			}
		})
	}
}
