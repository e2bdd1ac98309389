package formats

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/jetlake/jetlake/internal/formatstest"
)

// parquetFile is a parquet body as Apache Arrow's reader sees it.
type parquetFile = formatstest.ParquetFile

func readParquet(t testing.TB, body []byte) *parquetFile {
	t.Helper()
	return formatstest.ReadParquet(t, body)
}

// allTypes declares one typed column of each type.
var allTypes = []Column{
	{Name: "user_id", Source: "user.id", Type: TypeInt64},
	{Name: "name", Source: "user.name", Type: TypeString},
	{Name: "qty", Source: "items.0.qty", Type: TypeInt32},
	{Name: "price", Source: "items.0.price", Type: TypeDouble},
	{Name: "paid", Source: "paid", Type: TypeBoolean},
	{Name: "at", Source: "at", Type: TypeTimestamp, Unit: "ms"},
	{Name: "day", Source: "day", Type: TypeDate},
	{Name: "items", Source: "items", Type: TypeJSON},
	{Name: "sku", Source: "items.0.sku", Type: TypeString, Coerce: true},
}

func TestParquetSchemaHasTheLogicalTypesAthenaReads(t *testing.T) {
	body := encodeBody(t, Options{Format: Parquet, Headers: true, Columns: allTypes}, rec(`{}`))
	pf := readParquet(t, body)
	want := []string{
		"stream BYTE_ARRAY String UTF8 required",
		"subject BYTE_ARRAY String UTF8 required",
		"sequence INT64 Int(bitWidth=64, isSigned=true) INT_64 required",
		"timestamp INT64 TIMESTAMP(micros,utc=true) TIMESTAMP_MICROS required",
		"headers BYTE_ARRAY String UTF8 optional",
		"user_id INT64 Int(bitWidth=64, isSigned=true) INT_64 optional",
		"name BYTE_ARRAY String UTF8 optional",
		"qty INT32 Int(bitWidth=32, isSigned=true) INT_32 optional",
		"price DOUBLE - NONE optional",
		"paid BOOLEAN - NONE optional",
		"at INT64 TIMESTAMP(micros,utc=true) TIMESTAMP_MICROS optional",
		"day INT32 Date DATE optional",
		"items BYTE_ARRAY String UTF8 optional",
		"sku BYTE_ARRAY String UTF8 optional",
		"payload BYTE_ARRAY String UTF8 optional",
		"payload_base64 BYTE_ARRAY String UTF8 optional",
	}
	if !reflect.DeepEqual(pf.Columns, want) {
		t.Errorf("columns =\n%s\nwant\n%s", strings.Join(pf.Columns, "\n"), strings.Join(want, "\n"))
	}
	wantArrow := []string{"utf8", "utf8", "int64", "timestamp[us, tz=UTC]", "utf8", "int64", "utf8", "int32",
		"float64", "bool", "timestamp[us, tz=UTC]", "date32", "utf8", "utf8", "utf8", "utf8"}
	if !reflect.DeepEqual(pf.Arrow, wantArrow) {
		t.Errorf("Arrow types = %v, want %v", pf.Arrow, wantArrow)
	}
	if pf.CreatedBy != "jetlake" || pf.KV != 0 {
		t.Errorf("created_by = %q with %d key-value entries, want \"jetlake\" and none", pf.CreatedBy, pf.KV)
	}
}

func TestParquetWithoutPayloadOrHeaders(t *testing.T) {
	opts := Options{Format: Parquet, OmitPayload: true, Columns: allTypes[:1]}
	pf := readParquet(t, encodeBody(t, opts, rec(`{"user":{"id":7}}`)))
	want := []string{
		"stream BYTE_ARRAY String UTF8 required",
		"subject BYTE_ARRAY String UTF8 required",
		"sequence INT64 Int(bitWidth=64, isSigned=true) INT_64 required",
		"timestamp INT64 TIMESTAMP(micros,utc=true) TIMESTAMP_MICROS required",
		"user_id INT64 Int(bitWidth=64, isSigned=true) INT_64 optional",
	}
	if !reflect.DeepEqual(pf.Columns, want) {
		t.Errorf("columns =\n%s\nwant\n%s", strings.Join(pf.Columns, "\n"), strings.Join(want, "\n"))
	}
	if len(pf.Rows) != 1 || pf.Rows[0]["user_id"] != int64(7) {
		t.Errorf("rows = %v", pf.Rows)
	}
}

func TestParquetValuesReadBackWithArrow(t *testing.T) {
	at := time.Date(2026, 11, 29, 7, 0, 0, 123456789, time.UTC)
	record := func(seq uint64, data string) *Record {
		return &Record{Stream: "ORDERS", Subject: "orders.created", Sequence: seq, Time: at.Add(time.Duration(seq) * time.Second), Data: []byte(data)}
	}
	records := []*Record{
		record(1, `{"user": {"id": 42, "name": "Ann"}, "items": [{"sku": "A-1", "qty": 2, "price": 19.9}],
			"paid": true, "at": 1764399600123, "day": "2026-11-29"}`),
		record(2, `{"user": {"id": null}, "items": [], "paid": null, "at": null}`),
		record(3, `{"user": {"id": 9223372036854775807, "name": "caf\u00e9"}, "items": [{"sku": 12, "qty": -2147483648, "price": -0.0}],
			"paid": false, "at": "2026-11-29T08:00:00.5+01:00", "day": "2026-11-29T23:30:00-05:00"}`),
		record(4, `{"user": "not an object", "items": {"0": {"qty": 1}}}`),
		record(5, `plain text, not JSON`),
		record(6, "\xff\xfe binary"),
		record(7, ``),
		record(8, `[1, 2, 3]`),
		record(9, `{"user": {"id": "42"}, "items": [{"qty": 1.5, "price": "9"}], "paid": "true", "at": 1e400, "day": 20786}`),
		{Stream: "ORDERS\xff", Subject: "orders.日本", Sequence: math.MaxInt64, Time: time.Unix(0, 0),
			Headers: map[string][]string{"b": {"2", "1"}, "Nats-Msg-Id": {"id-1"}}, Data: []byte(` "just a string" `)},
	}
	opts := Options{Format: Parquet, Compression: Zstd, Headers: true, OnTypeError: NullTypeErrors, Columns: allTypes}
	pf := readParquet(t, encodeBody(t, opts, records...))

	envelope := func(r *Record) map[string]any {
		return map[string]any{"stream": r.Stream, "subject": r.Subject, "sequence": int64(r.Sequence),
			"timestamp": r.Time.UnixMicro(), "headers": nil, "payload": nil, "payload_base64": nil,
			"user_id": nil, "name": nil, "qty": nil, "price": nil, "paid": nil, "at": nil, "day": nil, "items": nil, "sku": nil}
	}
	want := make([]map[string]any, len(records))
	for i, r := range records {
		want[i] = envelope(r)
	}
	set := func(i int, kv ...any) {
		for j := 0; j < len(kv); j += 2 {
			want[i][kv[j].(string)] = kv[j+1]
		}
	}
	set(0, "payload", `{"user":{"id":42,"name":"Ann"},"items":[{"sku":"A-1","qty":2,"price":19.9}],"paid":true,"at":1764399600123,"day":"2026-11-29"}`,
		"user_id", int64(42), "name", "Ann", "qty", int64(2), "price", 19.9, "paid", true,
		"at", micros("2025-11-29T07:00:00.123Z"), "day", int64(20786), "items", `[{"sku":"A-1","qty":2,"price":19.9}]`, "sku", "A-1")
	set(1, "payload", `{"user":{"id":null},"items":[],"paid":null,"at":null}`, "items", `[]`)
	set(2, "payload", `{"user":{"id":9223372036854775807,"name":"caf\u00e9"},"items":[{"sku":12,"qty":-2147483648,"price":-0.0}],"paid":false,"at":"2026-11-29T08:00:00.5+01:00","day":"2026-11-29T23:30:00-05:00"}`,
		"user_id", int64(math.MaxInt64), "name", "café", "qty", int64(math.MinInt32), "price", math.Copysign(0, -1), "paid", false,
		"at", micros("2026-11-29T07:00:00.5Z"), "day", int64(20787), "items", `[{"sku":12,"qty":-2147483648,"price":-0.0}]`, "sku", "12")
	set(3, "payload", `{"user":"not an object","items":{"0":{"qty":1}}}`, "items", `{"0":{"qty":1}}`, "qty", int64(1))
	set(4, "payload", `plain text, not JSON`)
	set(5, "payload_base64", base64.StdEncoding.EncodeToString([]byte("\xff\xfe binary")))
	set(7, "payload", `[1,2,3]`)
	// Record 9 has a wrong type in every column but items; with
	// on_type_error = null they are null.
	set(8, "payload", `{"user":{"id":"42"},"items":[{"qty":1.5,"price":"9"}],"paid":"true","at":1e400,"day":20786}`,
		"items", `[{"qty":1.5,"price":"9"}]`)
	set(9, "stream", "ORDERS\ufffd", "payload", `"just a string"`, "headers", `{"Nats-Msg-Id":["id-1"],"b":["2","1"]}`)

	if len(pf.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(pf.Rows), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(pf.Rows[i], want[i]) {
			for k, v := range want[i] {
				if got := pf.Rows[i][k]; !reflect.DeepEqual(got, v) {
					t.Errorf("row %d: %s = %#v, want %#v", i, k, got, v)
				}
			}
			if len(pf.Rows[i]) != len(want[i]) {
				t.Errorf("row %d has columns %v", i, pf.Rows[i])
			}
		}
	}
	if math.Signbit(pf.Rows[2]["price"].(float64)) != true {
		t.Errorf("-0.0 lost its sign")
	}
}

func TestParquetRejectsSequencesBeyondInt64(t *testing.T) {
	e, err := New(Options{Format: Parquet})
	if err != nil {
		t.Fatal(err)
	}
	b := e.NewBatch()
	err = b.Append(with(rec(`1`), func(r *Record) { r.Sequence = math.MaxInt64 + 1 }))
	if err == nil || err.Error() != "formats: sequence 9223372036854775808 does not fit a parquet INT64" {
		t.Fatalf("Append = %v", err)
	}
	if b.Len() != 0 {
		t.Fatalf("Len = %d after a failed Append", b.Len())
	}
}

func TestParquetRowGroupsEndAtTheirSize(t *testing.T) {
	records := benchRecords(3000)
	for _, size := range []int64{64 << 10, 256 << 10, 1 << 30} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			pf := readParquet(t, encodeBody(t, Options{Format: Parquet, RowGroupSize: size}, records...))
			// About 330 bytes of values per record.
			if want := int(int64(len(records))*330/size) + 1; pf.RowGroups < want*8/10 || pf.RowGroups > want*12/10 {
				t.Errorf("%d row groups, want about %d", pf.RowGroups, want)
			}
			if len(pf.Rows) != len(records) {
				t.Fatalf("%d rows, want %d", len(pf.Rows), len(records))
			}
			for i, r := range records {
				if pf.Rows[i]["sequence"] != int64(r.Sequence) {
					t.Fatalf("row %d has sequence %v, want %d", i, pf.Rows[i]["sequence"], r.Sequence)
				}
			}
		})
	}
}

func TestAnEmptyParquetBatchIsAValidFile(t *testing.T) {
	for _, c := range []Compression{Snappy, Zstd, Gzip, None} {
		pf := readParquet(t, encodeBody(t, Options{Format: Parquet, Compression: c, Columns: allTypes}))
		if len(pf.Rows) != 0 || pf.RowGroups != 0 {
			t.Errorf("%s: %d rows in %d row groups, want none", c, len(pf.Rows), pf.RowGroups)
		}
	}
}

func TestALargePayloadIsWrittenOnce(t *testing.T) {
	// Statistics would repeat the min and max of every page and chunk.
	big := `{"s":"` + strings.Repeat("abcdefghij", 20_000) + `"}`
	for _, c := range []Compression{None, Snappy} {
		body := encodeBody(t, Options{Format: Parquet, Compression: c, Headers: true, Columns: []Column{{Name: "s", Source: "s", Type: TypeJSON}}},
			with(rec(big), func(r *Record) { r.Headers = map[string][]string{"K": {big}} }))
		if c == None && len(body) > 4*len(big)+4096 {
			t.Errorf("%s: a file with %d bytes of payload, headers and json has %d bytes", c, 3*len(big), len(body))
		}
		if c == Snappy && len(body) > 100_000 {
			t.Errorf("%s: a file with %d bytes of payload, headers and json has %d bytes", c, 3*len(big), len(body))
		}
	}
}

// FuzzParquet checks that any payload either appends or is rejected with a
// *TypeError, and that the file reads back with Arrow with the payload
// where the documentation says.
func FuzzParquet(f *testing.F) {
	f.Add([]byte(`{"user": {"id": 42, "name": "Ann"}, "items": [{"sku": "A-1", "qty": 2, "price": 19.9}], "paid": true, "at": 1764399600123, "day": "2026-11-29"}`), false)
	f.Add([]byte(`{"user": {"id": "42"}, "at": "2026-11-29T07:00:00+01:00", "day": "2026-11-29T23:00:00Z"}`), true)
	f.Add([]byte("\xff\x00"), false)
	f.Add([]byte(`text`), true)
	f.Add([]byte(`{"items": [{"qty": 1e400, "price": -1e400}]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, null bool) {
		opts := Options{Format: Parquet, Headers: true, Columns: allTypes}
		if null {
			opts.OnTypeError = NullTypeErrors
		}
		e, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		b := e.NewBatch()
		r := &Record{Stream: "S", Subject: "s.a", Sequence: 1, Time: time.Unix(1, 0), Data: data}
		if err := b.Append(r); err != nil {
			var te *TypeError
			if null || !errors.As(err, &te) {
				t.Fatalf("Append = %v", err)
			}
			if b.Len() != 0 {
				t.Fatalf("a rejected record is in the batch")
			}
			return
		}
		body, err := bytesOf(b.Finish())
		if err != nil {
			t.Fatal(err)
		}
		pf := readParquet(t, body)
		if len(pf.Rows) != 1 {
			t.Fatalf("%d rows", len(pf.Rows))
		}
		row := pf.Rows[0]
		var payload, b64 any
		if compact, ok := appendCompactJSON(nil, data); ok {
			payload = string(compact)
		} else if len(data) > 0 && utf8.Valid(data) {
			payload = string(data)
		} else if len(data) > 0 {
			b64 = base64.StdEncoding.EncodeToString(data)
		}
		if row["payload"] != payload || row["payload_base64"] != b64 {
			t.Fatalf("payload = %q, payload_base64 = %q; want %q, %q", row["payload"], row["payload_base64"], payload, b64)
		}
	})
}

func TestAnEmptyStringIsNotNull(t *testing.T) {
	opts := Options{Format: Parquet, Columns: []Column{{Name: "s", Source: "s", Type: TypeString}, {Name: "n", Source: "n", Type: TypeInt64}}}
	rows := readParquet(t, encodeBody(t, opts, rec(`{"s":"","n":1}`), rec(`{"s":"x"}`))).Rows
	if rows[0]["s"] != "" || rows[0]["n"] != int64(1) || rows[1]["s"] != "x" || rows[1]["n"] != nil {
		t.Fatalf("rows = %v", rows)
	}
}

func TestParquetColumnsCarryTheFieldIDsGiven(t *testing.T) {
	opts := Options{Format: Parquet, Headers: true, Columns: allTypes[:2]}
	fields := Fields(opts)
	// Positional ids, as a new table has them.
	opts.FieldIDs = PositionalFieldIDs(fields)
	body := encodeBody(t, opts, rec(`{}`))
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	for i, col := range f.Schema().Fields() {
		if col.Name() != fields[i].Name || col.ID() != i+1 {
			t.Errorf("column %d: %s with id %d, want %s with id %d", i, col.Name(), col.ID(), fields[i].Name, i+1)
		}
	}
	// Ids of a table whose schema evolved: as given, by name.
	opts.FieldIDs = map[string]int{}
	for i, fl := range fields {
		opts.FieldIDs[fl.Name] = 100 - i
	}
	body = encodeBody(t, opts, rec(`{}`))
	if f, err = parquet.OpenFile(bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	for i, col := range f.Schema().Fields() {
		if col.ID() != 100-i {
			t.Errorf("column %s has id %d, want %d", col.Name(), col.ID(), 100-i)
		}
	}
	delete(opts.FieldIDs, fields[len(fields)-1].Name)
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "has no field id") {
		t.Errorf("a column without a field id: %v", err)
	}
	if _, err := New(Options{Format: JSONLines, FieldIDs: map[string]int{"stream": 1}}); err == nil {
		t.Error("field ids accepted for json_lines")
	}
	// Without the option, no ids.
	plain := encodeBody(t, Options{Format: Parquet}, rec(`{}`))
	pf, err := parquet.OpenFile(bytes.NewReader(plain), int64(len(plain)))
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range pf.Schema().Fields() {
		if col.ID() != 0 {
			t.Errorf("column %s has id %d without FieldIDs", col.Name(), col.ID())
		}
	}
}
