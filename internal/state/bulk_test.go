package state_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/state"
)

// CreateAll and DeleteAll write as Create and Delete do, many at once:
// more keys than one window holds, a key that exists refused as
// ErrKeyExists, and the deleted keys gone from List.
func TestCreateAllAndDeleteAllWriteManyKeysAtOnce(t *testing.T) {
	srv := exportertest.NATS(t, exportertest.NATSOptions{})
	ctx := context.Background()
	kv, err := state.Open(ctx, srv.JetStream(t), "st", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Create(ctx, "intents.s.c.taken", []byte("first")); err != nil {
		t.Fatal(err)
	}
	entries := map[string][]byte{"intents.s.c.taken": []byte("second")}
	n := 1500 // more than one window
	for i := range n {
		entries[fmt.Sprintf("intents.s.c.i%d", i)] = []byte(fmt.Sprint(i))
	}
	failed := kv.CreateAll(ctx, entries)
	if len(failed) != 1 || !errors.Is(failed["intents.s.c.taken"], jetstream.ErrKeyExists) {
		t.Fatalf("failed %v, want only the existing key, as ErrKeyExists", failed)
	}
	got, err := kv.List(ctx, "intents.s.c.")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n+1 || string(got["intents.s.c.taken"]) != "first" || string(got["intents.s.c.i1234"]) != "1234" {
		t.Fatalf("%d keys listed, taken = %q, i1234 = %q; want %d, first, 1234", len(got), got["intents.s.c.taken"], got["intents.s.c.i1234"], n+1)
	}
	var keys []string
	for key := range got {
		keys = append(keys, key)
	}
	if failed := kv.DeleteAll(ctx, keys[:n]); len(failed) != 0 {
		t.Fatalf("delete failed: %v", failed)
	}
	left, err := kv.List(ctx, "intents.s.c.")
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 {
		t.Fatalf("%d keys left, want 1", len(left))
	}
	if _, ok := left[keys[n]]; !ok {
		t.Fatalf("left %v, want %s", left, keys[n])
	}
}
