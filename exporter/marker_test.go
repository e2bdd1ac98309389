package exporter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/lossmarker"
)

func TestLossMarkersOfAnotherConsumerAreNeverOverwritten(t *testing.T) {
	for _, conditional := range []bool{true, false} {
		store := &MemStore{}
		e := testExporter(t, store)
		e.conditional = conditional
		write := func(consumer string) *result {
			m := &lossmarker.Marker{Stream: "S", Consumer: consumer, FirstSeq: 5, LastSeq: 9, Count: 5, Reason: lossmarker.Gap, Error: "removed"}
			return e.writeMarker(context.Background(), &job{marker: m, stream: &streamWriter{cfg: config.Stream{Stream: "S", Consumer: consumer, AckWait: time.Minute}}})
		}
		first := write("one")
		if first.err != nil || !first.status.isStored() {
			t.Fatalf("conditional=%v: first marker: stored %v, %v", conditional, first.status.isStored(), first.err)
		}
		// The same loss found again (a restart, a retried attempt): fine.
		if again := write("one"); again.err != nil || !again.status.isStored() || again.key != first.key {
			t.Fatalf("conditional=%v: the same marker again: stored %v at %s, %v", conditional, again.status.isStored(), again.key, again.err)
		}
		other := write("two")
		var ce *objstore.CollisionError
		if !errors.As(other.err, &ce) || !ce.Marker || other.status.isStored() || other.key != first.key {
			t.Fatalf("conditional=%v: another consumer's marker at %s: stored %v, %v; want a objstore.CollisionError at %s", conditional, other.key, other.status.isStored(), other.err, first.key)
		}
		if md, _ := store.Head(context.Background(), first.key); md[objstore.MetaConsumer] != "one" || len(store.keys) != 1 {
			t.Fatalf("conditional=%v: after the collision the marker is %v after %d writes; want consumer one's, written once", conditional, md, len(store.keys))
		}
	}
}
