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
	// pathtemplate: at byte 9: unknown variable {subjct}; allowed: {stream}, {subject}, {subject:N}, {consumer}, {date}, {year}, {month}, {day}, {hour}, {minute}, {column:<name>}, {header:<Name>}
}

func ExampleParseName() {
	for _, name := range []string{
		"00000000000000000001-00000000000000000500.jsonl.gz",
		"00000000000000000001-00000000000000000060-c9f86d081884c7d659a2feaa0.parquet",
		"00000000000000001001-00000000000000001500.lost.json",
		"part-00000.parquet",
	} {
		n, ok := pathtemplate.ParseName(name)
		fmt.Printf("%d-%d %q %q %v\n", n.First, n.Last, n.Compaction, n.Ext, ok)
	}
	// Output:
	// 1-500 "" "jsonl.gz" true
	// 1-60 "9f86d081884c7d659a2feaa0" "parquet" true
	// 1001-1500 "" "lost.json" true
	// 0-0 "" "" false
}

func ExampleLostKey() {
	detected := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	fmt.Println(pathtemplate.LostKey("raw", "ORDERS", detected, 1001, 1500))
	fmt.Println(pathtemplate.StreamPrefix("raw", pathtemplate.Lost, "ORDERS"))
	// Output:
	// raw/_jetlake/lost/ORDERS/2026-11-29/00000000000000001001-00000000000000001500.lost.json
	// raw/_jetlake/lost/ORDERS/
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
