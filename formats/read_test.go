package formats_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/formats"
)

// What this package writes, it reads back: every sequence of an object of
// each format and compression, in the order written, named as ObjectType
// names it.
func TestSequencesReadsBackWhatEachFormatWrites(t *testing.T) {
	seqs := []uint64{3, 4, 9, 1 << 40}
	for _, f := range []formats.Format{formats.JSONLines, formats.JSONArray, formats.Parquet, formats.Raw} {
		for _, c := range []formats.Compression{"", formats.Gzip, formats.Zstd} {
			opts := formats.Options{Format: f, Compression: c, Metadata: true}
			ext, _, err := formats.ObjectType(opts)
			if err != nil {
				continue // not a combination the package writes
			}
			enc, err := formats.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			b := enc.NewBatch()
			for _, q := range seqs {
				rec := formats.Record{Stream: "S", Subject: "s.a", Sequence: q, Time: time.Unix(1, 0), Data: []byte(`{"a":1}`)}
				if err := b.Append(&rec); err != nil {
					t.Fatal(err)
				}
			}
			body, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			got, err := formats.Sequences("o/1-9."+ext, body.Bytes())
			if f == formats.Raw {
				if !errors.Is(err, formats.ErrNoRecords) {
					t.Errorf("raw%s: %v, %v; want ErrNoRecords", ext, got, err)
				}
				continue
			}
			if err != nil || !slices.Equal(got, seqs) {
				t.Errorf("%s %s (%s): %v, %v; want %v", f, c, ext, got, err, seqs)
			}
		}
	}
}

// JSON written without metadata has no sequences: verify says what it
// needs.
func TestSequencesOfJSONWithoutMetadataSayWhatIsNeeded(t *testing.T) {
	_, err := formats.Sequences("o/1-1.jsonl", []byte("{\"a\":1}\n"))
	if err == nil || !strings.Contains(err.Error(), "include_metadata") {
		t.Fatalf("%v, want an error naming include_metadata", err)
	}
}
