package exporter

import (
	"testing"

	"github.com/jetlake/jetlake/exporter/iceberg"
	"github.com/jetlake/jetlake/exporter/progress"
	"github.com/jetlake/jetlake/exporter/state"
)

// Recovery hands the table the data files of the intents it finds, never
// the objects of rejected messages, which are JSON under _jetlake/.
func TestRecoveredIntentsOfOtherObjectsStayOutOfTheTable(t *testing.T) {
	lt := &lakeTable{dataPrefix: "raw/lake/events/data", bucket: "b", planOf: map[string]*iceberg.Plan{},
		left: map[*iceberg.Plan]int{}, claimed: map[string]bool{}, deferred: map[string]bool{}}
	lt.found("intent.a", &state.Intent{Key: "raw/lake/events/data/subject=s/00000000000000000001-00000000000000000002.parquet", Seqs: progress.NewSeqs([]uint64{1, 2})})
	lt.found("intent.b", &state.Intent{Key: "raw/_jetlake/rejected/S/2026-12-01/00000000000000000003-00000000000000000003.jsonl", Seqs: progress.NewSeqs([]uint64{3})})
	if len(lt.pending) != 1 || lt.pending[0].Intent != "intent.a" || lt.pending[0].First != 1 || lt.pending[0].Last != 2 {
		t.Fatalf("pending %+v, want the data file of intent.a alone", lt.pending)
	}
}
