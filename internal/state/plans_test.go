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
	js, ctx := exportertest.NATS(t, exportertest.NATSOptions{}).JetStream(t), t.Context()
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

// The bucket jetlake creates keeps the marker of a deleted key for a
// while, not for good: every marker carries a TTL, and the server forgets
// the key after it. A bucket created before, without per-message TTLs,
// still has its keys deleted.
func TestTheMarkerOfADeletedKeyHasATTL(t *testing.T) {
	js, ctx := exportertest.NATS(t, exportertest.NATSOptions{}).JetStream(t), t.Context()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "older", History: 1, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	for _, bucket := range []string{"fresh", "older"} {
		kv, err := state.Open(ctx, js, bucket, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := kv.Create(ctx, "intent.c.s.a", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		if err := kv.Delete(ctx, "intent.c.s.a"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := kv.Get(ctx, "intent.c.s.a"); !errors.Is(err, state.ErrNoRecord) {
			t.Fatalf("%s: a deleted key reads %v", bucket, err)
		}
		stream, err := js.Stream(ctx, "KV_"+bucket)
		if err != nil {
			t.Fatal(err)
		}
		marker, err := stream.GetLastMsgForSubject(ctx, "$KV."+bucket+".intent.c.s.a")
		if err != nil {
			t.Fatal(err)
		}
		ttl := marker.Header.Get("Nats-TTL")
		switch {
		case bucket == "fresh" && ttl != "1m0s":
			t.Errorf("the marker of a deleted key has TTL %q, want 1m0s", ttl)
		case bucket == "older" && ttl != "":
			t.Errorf("a bucket without per-message TTLs got a marker with TTL %q", ttl)
		}
	}
}
