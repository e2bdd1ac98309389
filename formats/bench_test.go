package formats

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// benchRecords returns n records whose payloads are JSON objects of about
// 256 bytes, written with some whitespace as producers often do.
func benchRecords(n int) []*Record {
	records := make([]*Record, n)
	start := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	for i := range records {
		data := fmt.Sprintf(`{"id": %d, "type": "order.created", "customer": {"id": "c-%06d", "name": "Alice Example", "email": "alice@example.com"}, `+
			`"items": [{"sku": "SKU-%04d", "qty": 2, "price": 19.99}], "total": 39.98, "currency": "EUR", "channel": "web", "note": "caf\u00e9"}`,
			i, i%1000, i%10000)
		records[i] = &Record{
			Stream:   "ORDERS",
			Subject:  "orders.created",
			Sequence: uint64(i + 1),
			Time:     start.Add(time.Duration(i) * time.Millisecond),
			Data:     []byte(data),
		}
	}
	return records
}

// BenchmarkEncode encodes 10,000 records per op in every format and codec,
// into a batch in reuse. Parquet has three typed columns besides the
// envelope.
func BenchmarkEncode(b *testing.B) {
	records := benchRecords(10_000)
	var all []Options
	for _, f := range []Format{JSONLines, JSONArray, Raw} {
		for _, c := range []Compression{None, Gzip, Zstd} {
			all = append(all, Options{Format: f, Compression: c, Metadata: true, RawDelimiter: []byte("\n")})
		}
	}
	for _, c := range []Compression{Snappy, Zstd, Gzip, None} {
		all = append(all, Options{Format: Parquet, Compression: c, Columns: []Column{
			{Name: "order_id", Source: "id", Type: TypeInt64},
			{Name: "customer", Source: "customer.id", Type: TypeString},
			{Name: "total", Source: "total", Type: TypeDouble},
		}})
	}
	for _, opts := range all {
		b.Run(string(opts.Format)+"/"+string(opts.Compression), func(b *testing.B) {
			e, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			batch := e.NewBatch()
			fill := func() int {
				batch.Reset()
				for _, r := range records {
					if err := batch.Append(r); err != nil {
						b.Fatal(err)
					}
				}
				body, err := batch.Finish()
				if err != nil {
					b.Fatal(err)
				}
				return int(body.Len())
			}
			// Grow the batch first: the figures are for a batch in reuse.
			size := fill()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				fill()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(records)), "ns/record")
			b.ReportMetric(float64(size)/float64(len(records)), "B/record")
		})
	}
}

// BenchmarkSteadyState8MiB fills a batch until its object reaches 8 MiB,
// finishes it and resets it, as an exporter does with each object. "reuse"
// resets and refills one batch; "new" takes a new batch for every object
// and resets it when done, as a batch that is not kept for reuse.
func BenchmarkSteadyState8MiB(b *testing.B) {
	const limit = 8 << 20
	records := benchRecords(10_000)
	all := []Options{
		{Format: JSONLines, Compression: None, Metadata: true},
		{Format: JSONArray, Compression: None, Metadata: true},
		{Format: Raw, Compression: None, RawDelimiter: []byte("\n")},
		{Format: JSONLines, Compression: Zstd, Metadata: true},
		{Format: JSONLines, Compression: Gzip, Metadata: true},
		{Format: Parquet, Compression: Snappy},
		{Format: Parquet, Compression: Snappy, Columns: []Column{
			{Name: "order_id", Source: "id", Type: TypeInt64},
			{Name: "customer", Source: "customer.id", Type: TypeString},
			{Name: "total", Source: "total", Type: TypeDouble},
			{Name: "name", Source: "customer.name", Type: TypeString},
			{Name: "channel", Source: "channel", Type: TypeString},
		}},
	}
	for _, opts := range all {
		for _, mode := range []string{"reuse", "new"} {
			name := encodingName(opts)
			if len(opts.Columns) > 0 {
				name += "_typed"
			}
			b.Run(name+"/"+mode, func(b *testing.B) {
				e, err := New(opts)
				if err != nil {
					b.Fatal(err)
				}
				batch := e.NewBatch()
				next := 0
				fill := func() int64 {
					if mode == "new" {
						batch = e.NewBatch()
					}
					for batch.Size() < limit {
						if err := batch.Append(records[next]); err != nil {
							b.Fatal(err)
						}
						next = (next + 1) % len(records)
					}
					body, err := batch.Finish()
					if err != nil {
						b.Fatal(err)
					}
					n := body.Len()
					batch.Reset()
					return n
				}
				size := fill() // a batch in reuse, and warm pools
				b.SetBytes(size)
				b.ReportAllocs()
				for b.Loop() {
					fill()
				}
			})
		}
	}
}

// BenchmarkReadRecords reads 10,000 records per op back from an object of
// each JSON format and from parquet, as a restore reads them.
func BenchmarkReadRecords(b *testing.B) {
	records := benchRecords(10_000)
	for _, opts := range []Options{
		{Format: JSONLines, Metadata: true, Headers: true},
		{Format: JSONArray, Metadata: true, Headers: true},
		{Format: Parquet, Compression: Snappy},
	} {
		b.Run(string(opts.Format), func(b *testing.B) {
			data := encodeBody(b, opts, records...)
			key := objectKey(b, opts)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if err := ReadRecords(key, bytes.NewReader(data), int64(len(data)), func(*Record) error { n++; return nil }); err != nil || n != len(records) {
					b.Fatalf("%d records, %v", n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(records)), "ns/record")
		})
	}
}
