package lossmarker_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jetlake/jetlake/lossmarker"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenMarkers are the markers whose bodies testdata/<name>.golden holds.
func goldenMarkers() map[string]*lossmarker.Marker {
	cet := time.FixedZone("CET", 3600)
	return map[string]*lossmarker.Marker{
		"gap": {
			Stream:          "ORDERS",
			Consumer:        "jetlake-orders",
			FirstSeq:        1001,
			LastSeq:         1500,
			Count:           480,
			Reason:          lossmarker.Gap,
			Error:           "stream ORDERS removed sequences 1001-1500 before they were read (max_age)",
			DetectedAt:      time.Date(2026, 1, 1, 0, 30, 0, 123456789, cet),
			ExporterVersion: "v0.3.0",
		},
		"ranges": {
			Stream:          "ORDERS",
			Consumer:        "jetlake-orders",
			FirstSeq:        2,
			LastSeq:         2000001,
			Count:           1000001,
			Ranges:          []lossmarker.Range{{First: 2, Last: 1000001}, {First: 2000001, Last: 2000001}},
			Reason:          lossmarker.Gap,
			Error:           "the stream removed these sequences before they were exported",
			DetectedAt:      time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
			ExporterVersion: "v0.4.0",
		},
		"poison": {
			Stream:          "ORDERS",
			Consumer:        "jetlake-orders",
			Subject:         "orders.eu.\"créé\"",
			FirstSeq:        42,
			LastSeq:         42,
			Count:           1,
			Reason:          lossmarker.Poison,
			Error:           "payload of 9 MiB is over the object limit; <html> & \"quotes\" stay as written",
			DetectedAt:      time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC),
			ExporterVersion: "v0.3.0",
		},
	}
}

func TestEncodeGolden(t *testing.T) {
	for name, m := range goldenMarkers() {
		t.Run(name, func(t *testing.T) {
			got, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".golden")
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
				t.Errorf("body differs from %s (run go test -update if the change is intended):\ngot:\n%s\nwant:\n%s", path, got, want)
			}
			parsed, err := lossmarker.Parse(want)
			if err != nil {
				t.Fatalf("Parse(%s): %v", path, err)
			}
			checkSameMarker(t, parsed, m)
		})
	}
}
