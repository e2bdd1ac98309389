package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// exportedFloor returns the sequence up to which the consumer ci describes
// shows everything exported: its ack floor when it takes acks; for one
// that takes none (a limits stream's), whose ack floor moves at delivery,
// the floor of its connector's export record in the default state bucket,
// which such a consumer's ack floor stands for (0 before there is one).
func exportedFloor(t *testing.T, js jetstream.JetStream, ci *jetstream.ConsumerInfo) uint64 {
	t.Helper()
	if ci.Config.AckPolicy != jetstream.AckNonePolicy {
		return ci.AckFloor.Stream
	}
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, config.DefaultStateBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	connector := ci.Config.Metadata[jsclient.MetaConsumerConnector]
	entry, err := kv.Get(ctx, statekey.Record(connector, ci.Stream, ci.Name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var rec state.Record
	if err := json.Unmarshal(entry.Value(), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Floor
}

// heldBy returns the last sequence the consumer ci describes delivered
// that its connector may still hold unexported: read ack-less, the last it
// delivered (it shows nothing unacked); with acks, 0 (NumAckPending says).
func heldBy(ci *jetstream.ConsumerInfo) uint64 {
	if ci.Config.AckPolicy != jetstream.AckNonePolicy {
		return 0
	}
	return ci.Delivered.Stream
}
