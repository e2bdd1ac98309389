package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/pathtemplate"
)

// The longest data file key of a table is known at start: no subject, of
// any length, makes a longer one, so a table whose bound fits never meets
// a key S3 refuses.
func TestNoSubjectMakesADataFileKeyLongerThanTheTablesBound(t *testing.T) {
	schema, err := iceberg.Schema(formats.Fields(formats.Options{Format: formats.Parquet}))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := iceberg.Spec(schema, config.DefaultPartitioning)
	if err != nil {
		t.Fatal(err)
	}
	part, err := iceberg.NewPartitioner(schema, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "raw/lake/events/data"
	bound := maxDataKeyLen(prefix, part, "parquet")
	if bound > pathtemplate.MaxKeyLen {
		t.Fatalf("the default partitioning's keys may be %d bytes", bound)
	}
	ts := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	for _, subject := range []string{"events.a", strings.Repeat("é", 500), strings.Repeat("a", 10_000), strings.Repeat("~%+ ", 300)} {
		dir := part.AppendDir(nil, "EVENTS", subject, 1, ts, nil)
		key := pathtemplate.AppendKey(nil, prefix, dir, 1<<63, 1<<63, "parquet")
		if len(key) > bound {
			t.Errorf("subject of %d bytes: a key of %d bytes, over the bound %d", len(subject), len(key), bound)
		}
	}
	if n := maxDataKeyLen(strings.Repeat("p", 900)+"/lake/events/data", part, "parquet"); n <= pathtemplate.MaxKeyLen {
		t.Errorf("a 900-byte prefix: keys of at most %d bytes", n)
	}
}
