package formats_test

import (
	"fmt"
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
	fmt.Printf("%s (%s): %d records, %d bytes, Size said %d\n", enc.Ext(), enc.ContentType(), batch.Len(), len(body), size)
	fmt.Print(string(body))
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
