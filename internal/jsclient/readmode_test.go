package jsclient_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/jsclient"
)

func TestModeForReadsOnlyLimitsStreamsWithoutAcks(t *testing.T) {
	for _, tt := range []struct {
		retention jetstream.RetentionPolicy
		ackLess   bool
		policy    jetstream.AckPolicy
	}{
		{jetstream.LimitsPolicy, true, jetstream.AckNonePolicy},
		{jetstream.WorkQueuePolicy, false, jetstream.AckExplicitPolicy},
		{jetstream.InterestPolicy, false, jetstream.AckExplicitPolicy},
	} {
		m := jsclient.ModeFor(tt.retention)
		if m.AckLess != tt.ackLess || m.Policy() != tt.policy || m.Why == "" {
			t.Errorf("%s: %+v, policy %s; want ack-less %v, policy %s and a reason", tt.retention, m, m.Policy(), tt.ackLess, tt.policy)
		}
	}
}

// What a consumer shows exported: an ack floor where acks are taken; where
// none are, the ack floor moves at delivery and only the start jetlake
// recorded counts.
func TestProvenTrustsTheAckFloorOnlyOfAConsumerThatTakesAcks(t *testing.T) {
	info := func(policy jetstream.AckPolicy, from string, floor uint64) *jetstream.ConsumerInfo {
		ci := &jetstream.ConsumerInfo{Config: jetstream.ConsumerConfig{AckPolicy: policy}}
		if from != "" {
			ci.Config.Metadata = map[string]string{jsclient.MetaDeliverFrom: from}
		}
		ci.AckFloor.Stream = floor
		return ci
	}
	for _, tt := range []struct {
		name string
		ci   *jetstream.ConsumerInfo
		want uint64
	}{
		{"nil", nil, 0},
		{"explicit", info(jetstream.AckExplicitPolicy, "", 700), 700},
		{"explicit, metadata ignored", info(jetstream.AckExplicitPolicy, "900", 700), 700},
		{"ack-less without a recorded start", info(jetstream.AckNonePolicy, "", 700), 0},
		{"ack-less from its start", info(jetstream.AckNonePolicy, "501", 700), 500},
		{"ack-less moved back below its start", info(jetstream.AckNonePolicy, "501", 300), 300},
		{"ack-less from the first sequence", info(jetstream.AckNonePolicy, "1", 700), 0},
		{"ack-less with a start of 0", info(jetstream.AckNonePolicy, "0", 700), 0},
		{"ack-less with a start that is no number", info(jetstream.AckNonePolicy, "x", 700), 0},
	} {
		if got := jsclient.Proven(tt.ci); got != tt.want {
			t.Errorf("%s: Proven = %d, want %d", tt.name, got, tt.want)
		}
	}
}
