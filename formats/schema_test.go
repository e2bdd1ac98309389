package formats

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// fieldNames returns the names of fields.
func fieldNames(fields []Field) []string {
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	return names
}

func TestFieldsAreTheColumnsOfParquetFiles(t *testing.T) {
	for _, opts := range []Options{
		{Format: Parquet},
		{Format: Parquet, Headers: true, Columns: allTypes},
		{Format: Parquet, OmitPayload: true, Columns: allTypes[:1]},
	} {
		pf := readParquet(t, encodeBody(t, opts, rec(`{}`)))
		var want []string
		for _, c := range pf.Columns {
			name, _, _ := strings.Cut(c, " ")
			want = append(want, name)
		}
		fields := Fields(opts)
		if got := fieldNames(fields); !slices.Equal(got, want) {
			t.Errorf("Fields(%+v) = %q, want the file's columns %q", opts, got, want)
		}
		for i, f := range fields {
			if optional := strings.HasSuffix(pf.Columns[i], " optional"); f.Optional != optional {
				t.Errorf("field %s: Optional = %v, file column %q", f.Name, f.Optional, pf.Columns[i])
			}
			if typed := slices.ContainsFunc(opts.Columns, func(c Column) bool { return c.Name == f.Name }); f.Typed != typed {
				t.Errorf("field %s: Typed = %v, want %v", f.Name, f.Typed, typed)
			}
		}
	}
}

func TestFieldsAreTheMembersOfJSONRecords(t *testing.T) {
	withHeaders := func(r *Record) { r.Headers = map[string][]string{"K": {"v"}} }
	tests := []struct {
		opts Options
		r    *Record
	}{
		{Options{Metadata: true}, rec("\xff binary")},
		{Options{Format: JSONArray, Metadata: true, Headers: true}, with(rec("\xff binary"), withHeaders)},
	}
	for _, tt := range tests {
		body := encodeBody(t, tt.opts, tt.r)
		body = []byte(strings.Trim(string(body), "[]\n"))
		dec := json.NewDecoder(strings.NewReader(string(body)))
		var keys []string
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, tok.(string))
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
		if got := fieldNames(Fields(tt.opts)); !slices.Equal(got, keys) {
			t.Errorf("Fields(%+v) = %q, want the record's members %q", tt.opts, got, keys)
		}
	}
}

// With ExactPayload a JSON record may end with payload_original, where
// payload_encoding would be for a payload that is not JSON.
func TestFieldsOfExactPayloads(t *testing.T) {
	opts := Options{Format: JSONArray, Metadata: true, Headers: true, ExactPayload: true}
	want := append(fieldNames(Fields(Options{Metadata: true, Headers: true})), "payload_original")
	if got := fieldNames(Fields(opts)); !slices.Equal(got, want) {
		t.Errorf("Fields(%+v) = %q, want %q", opts, got, want)
	}
	body := string(encodeBody(t, opts, rec(`{ "id": 1 }`)))
	if !strings.HasSuffix(body, `"payload":{"id":1},"payload_original":"eyAiaWQiOiAxIH0="}]`) {
		t.Errorf("record %s does not end with payload and payload_original", body)
	}
}

func TestRecordsWithoutStructureHaveNoFields(t *testing.T) {
	for _, opts := range []Options{{}, {Format: JSONArray, Headers: true}, {Format: Raw, Metadata: true}} {
		if f := Fields(opts); f != nil {
			t.Errorf("Fields(%+v) = %v, want none", opts, f)
		}
	}
}

func TestEnvelopeNames(t *testing.T) {
	want := []string{"stream", "subject", "sequence", "timestamp", "headers", "payload", "payload_base64"}
	if got := EnvelopeNames(); !slices.Equal(got, want) {
		t.Errorf("EnvelopeNames() = %q, want %q", got, want)
	}
}

func TestObjectTypeIsTheEncoders(t *testing.T) {
	formats := []Format{"", JSONLines, JSONArray, Raw, Parquet}
	compressions := []Compression{"", None, Gzip, Zstd, Snappy}
	for _, f := range formats {
		for _, c := range compressions {
			opts := Options{Format: f, Compression: c}
			ext, contentType, err := ObjectType(opts)
			enc, newErr := New(opts)
			if (err == nil) != (newErr == nil) || err != nil && err.Error() != newErr.Error() {
				t.Errorf("%s/%s: ObjectType error %v, New error %v", f, c, err, newErr)
				continue
			}
			if err == nil && (ext != enc.Ext() || contentType != enc.ContentType()) {
				t.Errorf("%s/%s: ObjectType = %q, %q; the encoder says %q, %q", f, c, ext, contentType, enc.Ext(), enc.ContentType())
			}
		}
	}
	if _, _, err := ObjectType(Options{Format: "csv"}); err == nil {
		t.Error("ObjectType of an unknown format succeeded")
	}
}
