package lossmarker_test

import (
	"fmt"
	"time"

	"github.com/jetlake/jetlake/lossmarker"
)

func Example() {
	m := &lossmarker.Marker{
		Stream:          "ORDERS",
		Consumer:        "jetlake-orders",
		FirstSeq:        1001,
		LastSeq:         1500,
		Count:           500,
		Reason:          lossmarker.Gap,
		Error:           "stream removed sequences 1001-1500 before they were read",
		DetectedAt:      time.Date(2026, 1, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)),
		ExporterVersion: "v0.3.0",
	}
	body, err := m.Encode()
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Key("raw"))
	fmt.Print(string(body))
	// Output:
	// raw/_jetlake/lost/ORDERS/2025-12-31/00000000000000001001-00000000000000001500.lost.json
	// {
	//   "stream": "ORDERS",
	//   "consumer": "jetlake-orders",
	//   "first_seq": 1001,
	//   "last_seq": 1500,
	//   "count": 500,
	//   "reason": "gap",
	//   "error": "stream removed sequences 1001-1500 before they were read",
	//   "detected_at": "2025-12-31T23:30:00Z",
	//   "exporter_version": "v0.3.0"
	// }
}
