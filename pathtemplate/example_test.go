package pathtemplate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jetlake/jetlake/pathtemplate"
)

func Example() {
	tpl, err := pathtemplate.Parse("{stream}/{subject:2}/date={date}/hour={hour}")
	if err != nil {
		panic(err)
	}
	dir := tpl.Dir(&pathtemplate.Values{
		Stream:  "ORDERS",
		Subject: "orders.eu west.created",
		Time:    time.Date(2026, 1, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)),
	})
	key, err := pathtemplate.Key("raw", dir, 1, 500, "jsonl")
	fmt.Println(key, err)

	_, err = pathtemplate.Parse("{stream}/{subjct}")
	fmt.Println(err)
	// Output:
	// raw/ORDERS/eu%20west/date=2025-12-31/hour=23/00000000000000000001-00000000000000000500.jsonl <nil>
	// pathtemplate: at byte 9: unknown variable {subjct}; allowed: {stream}, {subject}, {subject:N}, {consumer}, {date}, {year}, {month}, {day}, {hour}, {minute}
}

func BenchmarkAppendDir(b *testing.B) {
	tpl := pathtemplate.MustParse("{stream}/{subject}/{date}/{hour}")
	v := &pathtemplate.Values{Stream: "ORDERS", Subject: "orders.eu.created", Time: time.Now()}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = tpl.AppendDir(buf[:0], v)
	}
}
