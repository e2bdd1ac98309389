package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/lease"
)

// A lease is claimed once, renewed only by the revision its holder last
// wrote, released only by it, and gone once its TTL passes unrenewed.
func TestALeaseIsHeldByOneAndExpiresUnlessRenewed(t *testing.T) {
	exportertest.SkipShort(t)
	s, err := exportertest.StartNATS(exportertest.NATSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "state"}); err != nil {
		t.Fatal(err)
	}
	st, err := lease.Open(ctx, js, "state")
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 2 * time.Second
	rev, err := st.Claim(ctx, "lease.a.0", []byte("one"), ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, "lease.a.0", []byte("two"), ttl); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("second claim: %v, want ErrHeld", err)
	}
	rev2, err := st.Renew(ctx, "lease.a.0", rev, []byte("one"), ttl)
	if err != nil || rev2 <= rev {
		t.Fatalf("renew: %d, %v", rev2, err)
	}
	if _, err := st.Renew(ctx, "lease.a.0", rev, []byte("two"), ttl); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renew with a stale revision: %v, want ErrLost", err)
	}
	if err := st.Release(ctx, "lease.a.0", rev); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("release with a stale revision: %v, want ErrLost", err)
	}
	entries, err := st.List(ctx, "lease.a.>")
	if err != nil || len(entries) != 1 || string(entries[0].Value) != "one" || entries[0].Revision != rev2 {
		t.Fatalf("list: %+v, %v", entries, err)
	}
	if err := st.Release(ctx, "lease.a.0", rev2); err != nil {
		t.Fatal(err)
	}
	if entries, err := st.List(ctx, "lease.a.>"); err != nil || len(entries) != 0 {
		t.Fatalf("list after release: %+v, %v", entries, err)
	}
	// Claimed again, then left to expire.
	rev3, err := st.Claim(ctx, "lease.a.0", []byte("two"), ttl)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * ttl)
	for {
		entries, err := st.List(ctx, "lease.a.>")
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease outlived %s unrenewed", 3*ttl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := st.Renew(ctx, "lease.a.0", rev3, []byte("two"), ttl); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renew after expiry: %v, want ErrLost", err)
	}
	if _, err := st.Claim(ctx, "lease.a.0", []byte("three"), ttl); err != nil {
		t.Fatalf("claim after expiry: %v", err)
	}
}

// A key written without a TTL stays until someone takes it over: a
// takeover names the revision it judged dead, so only the first of two
// succeeds, and none once the key was written again; the lease it leaves
// expires like any other.
func TestALeaseWithoutATTLIsTakenOverOnceByItsRevision(t *testing.T) {
	exportertest.SkipShort(t)
	s, err := exportertest.StartNATS(exportertest.NATSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "state"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := lease.Open(ctx, js, "state")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	handRev, err := kv.Put(ctx, "lease.a.0", []byte("by hand"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := st.List(ctx, "lease.a.>")
	if err != nil || len(entries) != 1 || entries[0].Revision != handRev {
		t.Fatalf("list: %+v, %v", entries, err)
	}
	if c := entries[0].Created; c.Before(before.Add(-time.Minute)) || c.After(time.Now().Add(time.Minute)) {
		t.Fatalf("created %s, written at %s", c, before)
	}
	if _, err := st.Claim(ctx, "lease.a.0", []byte("one"), time.Second); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("claim of a key written by hand: %v, want ErrHeld", err)
	}
	const ttl = 2 * time.Second
	rev, err := st.TakeOver(ctx, "lease.a.0", handRev, []byte("one"), ttl)
	if err != nil || rev <= handRev {
		t.Fatalf("take over: %d, %v", rev, err)
	}
	if _, err := st.TakeOver(ctx, "lease.a.0", handRev, []byte("two"), ttl); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("second take over of the same revision: %v, want ErrHeld", err)
	}
	rev2, err := st.Renew(ctx, "lease.a.0", rev, []byte("one"), ttl)
	if err != nil {
		t.Fatalf("renew after take over: %v", err)
	}
	if _, err := st.TakeOver(ctx, "lease.a.0", rev, []byte("two"), ttl); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("take over of a renewed lease: %v, want ErrHeld", err)
	}
	// The lease taken over carries a TTL: unrenewed, it goes.
	deadline := time.Now().Add(3 * ttl)
	for {
		entries, err := st.List(ctx, "lease.a.>")
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease taken over outlived %s unrenewed: %+v", 3*ttl, entries)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := st.Renew(ctx, "lease.a.0", rev2, []byte("one"), ttl); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renew after expiry: %v, want ErrLost", err)
	}
}
