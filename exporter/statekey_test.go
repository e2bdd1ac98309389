package exporter

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// The orphan sweep keeps what the intents and commit plans name. Both are
// written under keys statekey names (a stream's intents by setupStream and
// storeBatch, a table's plans by iceberg.Committer), and the sweep reads
// them back through the same names: an intent or plan of this connector is
// found, another connector's is not.
func TestTheOrphanSweepFindsEveryFileAnIntentOrPlanNames(t *testing.T) {
	ctx := context.Background()
	st := exportertest.NewMemKV()
	c := &config.Connector{Name: "events", Iceberg: &config.Iceberg{Namespace: "lake", Table: "events"}}
	put := func(key string, v any) {
		value, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Create(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	s := &streamWriter{}
	for _, conn := range []string{c.Name, "other"} {
		s.intentPrefix = statekey.StreamIntents(conn, "EVENTS", conn)
		put(s.intentPrefix+"id-1", &state.Intent{ID: "id-1", Key: "lake/events/data/" + conn + "-1.parquet", Stream: "EVENTS", Created: time.Now()})
		plan := &iceberg.Plan{ID: "p-1", Files: []iceberg.File{{Location: "s3://b/lake/events/data/" + conn + "-2.parquet"}}}
		put(statekey.Plan(statekey.Commits(conn, "lake", "events"), plan.ID), plan)
	}
	named, err := state.NamedFiles(ctx, st, c.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !named["lake/events/data/events-1.parquet"] || named["lake/events/data/other-1.parquet"] || len(named) != 1 {
		t.Errorf("files the intents name: %v; want this connector's one", named)
	}
	planned, err := lake.PlannedFiles(ctx, st, c)
	if err != nil {
		t.Fatal(err)
	}
	if !planned["s3://b/lake/events/data/events-2.parquet"] || len(planned) != 1 {
		t.Errorf("files the plans name: %v; want this connector's one", planned)
	}
}
