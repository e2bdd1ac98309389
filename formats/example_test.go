package formats_test

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jetlake/jetlake/formats"
)

func Example() {
	enc, err := formats.New(formats.Options{Format: formats.JSONLines, Metadata: true, Headers: true})
	if err != nil {
		panic(err)
	}
	batch := enc.NewBatch()
	at := time.Date(2026, 11, 29, 8, 0, 0, 123456789, time.FixedZone("CET", 3600))
	for i, data := range []string{`{ "id": 1, "amount": 12345678901234567890.50 }`, "not JSON", ""} {
		err := batch.Append(&formats.Record{
			Stream:   "EVENTS",
			Subject:  "events.a",
			Sequence: uint64(42 + i),
			Time:     at,
			Headers:  map[string][]string{"Nats-Msg-Id": {fmt.Sprint("m-", i)}},
			Data:     []byte(data),
		})
		if err != nil {
			panic(err)
		}
	}
	size := batch.Size()
	body, err := batch.Finish()
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (%s): %d records, %d bytes, Size said %d\n", enc.Ext(), enc.ContentType(), batch.Len(), body.Len(), size)
	// An upload reads the body where it is: body.NewReader() is an
	// io.ReadSeeker and io.ReaderAt of body.Len() bytes.
	if _, err := body.WriteTo(os.Stdout); err != nil {
		panic(err)
	}
	batch.Reset() // the body is not valid anymore
	// Output:
	// jsonl (application/x-ndjson): 3 records, 522 bytes, Size said 522
	// {"stream":"EVENTS","subject":"events.a","sequence":42,"timestamp":"2026-11-29T07:00:00.123456789Z","headers":{"Nats-Msg-Id":["m-0"]},"payload":{"id":1,"amount":12345678901234567890.50}}
	// {"stream":"EVENTS","subject":"events.a","sequence":43,"timestamp":"2026-11-29T07:00:00.123456789Z","headers":{"Nats-Msg-Id":["m-1"]},"payload":"bm90IEpTT04=","payload_encoding":"base64"}
	// {"stream":"EVENTS","subject":"events.a","sequence":44,"timestamp":"2026-11-29T07:00:00.123456789Z","headers":{"Nats-Msg-Id":["m-2"]},"payload":null}
}

func ExampleAppendJSONRecord() {
	r := &formats.Record{Data: []byte("[1, 2,\n 3]")}
	fmt.Println(string(formats.AppendJSONRecord(nil, r, formats.Options{})))
	r.Data = []byte{0xff, 0x00}
	fmt.Println(string(formats.AppendJSONRecord(nil, r, formats.Options{})))
	// Output:
	// [1,2,3]
	// {"payload":"/wA=","payload_encoding":"base64"}
}

func ExampleTypeError() {
	enc, err := formats.New(formats.Options{
		Format:      formats.Parquet,
		Compression: formats.Zstd,
		Columns: []formats.Column{
			{Name: "user_id", Source: "user.id", Type: formats.TypeInt64},
			{Name: "at", Source: "at", Type: formats.TypeTimestamp, Unit: "ms"},
		},
	})
	if err != nil {
		panic(err)
	}
	batch := enc.NewBatch()
	for i, data := range []string{
		`{"user": {"id": 42}, "at": 1764399600123}`,
		`{"user": {"id": "42"}}`,
		`{"user": {}, "at": "2026-11-29T08:00:00+01:00"}`,
		`not JSON: every typed column is null`,
	} {
		err := batch.Append(&formats.Record{Stream: "EVENTS", Subject: "events.a", Sequence: uint64(i + 1), Data: []byte(data)})
		var te *formats.TypeError
		if errors.As(err, &te) {
			// The exporter records such a message under _jetlake/.
			fmt.Printf("rejected: column %s, value %s: %s\n", te.Column, te.Value, te.Reason)
			continue
		}
		if err != nil {
			panic(err)
		}
	}
	body, err := batch.Finish()
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (%s): %d records, %q\n", enc.Ext(), enc.ContentType(), batch.Len(), body.Bytes()[:4])
	// Output:
	// rejected: column user_id, value "42": a string is not an int64 without coerce
	// parquet (application/vnd.apache.parquet): 3 records, "PAR1"
}

func ExampleFields() {
	opts := formats.Options{Format: formats.Parquet, Columns: []formats.Column{{Name: "user_id", Source: "user.id", Type: formats.TypeInt64}}}
	for _, f := range formats.Fields(opts) {
		fmt.Println(f.Name, f.Type, f.Optional, f.Typed)
	}
	// Output:
	// stream string false false
	// subject string false false
	// sequence int64 false false
	// timestamp timestamp false false
	// user_id int64 true true
	// payload string true false
	// payload_base64 string true false
}

func ExampleObjectType() {
	ext, contentType, err := formats.ObjectType(formats.Options{Format: formats.JSONLines, Compression: formats.Zstd})
	fmt.Println(ext, contentType, err)
	// Output: jsonl.zst application/zstd <nil>
}
