package state_test

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/state"
)

// A claim is released only while it holds the plan's id: one another plan
// took since is left alone, on the state bucket itself.
func TestReleaseDeletesAClaimOnlyWhileItHoldsTheValue(t *testing.T) {
	ns := exportertest.NATS(t, exportertest.NATSOptions{})
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	kv, err := state.Open(ctx, js, "plans", 1)
	if err != nil {
		t.Fatal(err)
	}
	plans := state.Plans(kv)
	if err := plans.Create(ctx, "c.claim.f", []byte("planB")); err != nil {
		t.Fatal(err)
	}
	if err := plans.Release(ctx, "c.claim.f", []byte("planA")); err != nil {
		t.Fatal(err)
	}
	if v, err := plans.Get(ctx, "c.claim.f"); err != nil || string(v) != "planB" {
		t.Fatalf("another plan's claim: %q, %v", v, err)
	}
	if err := plans.Release(ctx, "c.claim.f", []byte("planB")); err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Get(ctx, "c.claim.f"); !errors.Is(err, iceberg.ErrMissing) {
		t.Fatalf("released claim: %v", err)
	}
	if err := plans.Release(ctx, "c.claim.f", []byte("planB")); err != nil {
		t.Fatalf("releasing a missing claim: %v", err)
	}
	// Deleting at a revision the key moved past changes nothing.
	if err := plans.Create(ctx, "c.claim.g", []byte("planC")); err != nil {
		t.Fatal(err)
	}
	_, rev, err := kv.Get(ctx, "c.claim.g")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.DeleteRev(ctx, "c.claim.g", rev+1); !errors.Is(err, state.ErrRecordChanged) {
		t.Fatalf("DeleteRev at a later revision: %v, want ErrRecordChanged", err)
	}
	if err := kv.DeleteRev(ctx, "c.claim.g", rev); err != nil {
		t.Fatal(err)
	}
	if _, err := plans.Get(ctx, "c.claim.g"); !errors.Is(err, iceberg.ErrMissing) {
		t.Fatalf("deleted claim: %v", err)
	}
}
