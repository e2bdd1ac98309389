package jsclient_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
)

// The one rule run and plan apply to an existing consumer: what jetlake
// cannot change is refused, what it changes on start is listed, and
// harmful when it works against the rotation limits until then.
func TestCheckConsumerRefusesWhatRunCannotChangeAndListsWhatItUpdates(t *testing.T) {
	c := &config.Connector{
		Name:     "orders",
		Rotation: config.Rotation{MaxFileAge: 10 * time.Second, MaxMessagesPerFile: 500},
	}
	s := config.Stream{Stream: "ORDERS", Subjects: []string{"orders.>"}, Consumer: "orders",
		DeliverPolicy: config.DeliverAll, AckWait: 30 * time.Second, MaxAckPending: 1000}
	pinned := s
	pinned.Failover, pinned.PriorityTimeout = config.FailoverPinned, 30*time.Second
	fits := jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		MaxAckPending: 1000, MaxDeliver: -1, FilterSubject: "orders.>"}
	fitsPinned := fits
	fitsPinned.PriorityPolicy, fitsPinned.PriorityGroups, fitsPinned.PinnedTTL = jetstream.PriorityPolicyPinned, []string{jsclient.PriorityGroup}, 30*time.Second
	with := func(base jetstream.ConsumerConfig, change func(*jetstream.ConsumerConfig)) jetstream.ConsumerConfig {
		change(&base)
		return base
	}
	type problem struct {
		refused, harmful bool
		msg              string // a part of the message
	}
	for _, tt := range []struct {
		name    string
		s       config.Stream
		have    jetstream.ConsumerConfig
		ackLess bool // read as a limits stream is; otherwise with explicit acks
		want    []problem
	}{
		{name: "fits", s: s, have: fits},
		{name: "fits pinned", s: pinned, have: fitsPinned},
		{name: "one filter as a list fits", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) {
			h.FilterSubject, h.FilterSubjects = "", []string{"orders.>"}
		})},
		{name: "its own", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) {
			h.Metadata = map[string]string{jsclient.MetaConsumerConnector: "orders"}
		})},
		{name: "without an owner (made by hand or an old release)", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) {
			h.Metadata = map[string]string{"team": "billing"}
		})},
		{name: "another connector's", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) {
			h.Metadata = map[string]string{jsclient.MetaConsumerConnector: "billing"}
		}), want: []problem{
			{refused: true, msg: `belongs to connector "billing" (its metadata jetlake_connector), not to "orders": two connectors on one consumer would each take messages the other then never exports; ` +
				`set streams[2].consumer to another name, or, if connector "billing" is gone for good, set the consumer's jetlake_connector metadata to "orders" or delete the consumer`},
		}},
		{name: "an empty owner is another connector's", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) {
			h.Metadata = map[string]string{jsclient.MetaConsumerConnector: ""}
		}), want: []problem{
			{refused: true, msg: `belongs to connector ""`},
		}},
		{name: "AckAll", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) { h.AckPolicy = jetstream.AckAllPolicy }), want: []problem{
			{msg: `AckPolicy all; jetlake reads this stream with explicit acks (interest retention: a consumer without acks would let the server remove a message at delivery, before its object is stored): it rebuilds the consumer with AckPolicy explicit from the export record on start`},
		}},
		{name: "ack-less fits", s: s, ackLess: true, have: with(fits, func(h *jetstream.ConsumerConfig) {
			h.AckPolicy, h.AckWait, h.MaxAckPending = jetstream.AckNonePolicy, 0, 0
		})},
		{name: "ack-less ignores AckWait and MaxAckPending", s: s, ackLess: true, have: with(fits, func(h *jetstream.ConsumerConfig) {
			h.AckPolicy, h.AckWait, h.MaxAckPending = jetstream.AckNonePolicy, time.Second, 3
		})},
		{name: "explicit where ack-less reads", s: s, ackLess: true, have: fits, want: []problem{
			{msg: `AckPolicy explicit; jetlake reads this stream ack-less (limits retention: the stream keeps its messages whatever the consumer acks, so the export record decides and the server keeps no pending set): it rebuilds the consumer with AckPolicy none from the export record on start`},
		}},
		{name: "finite MaxDeliver", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) { h.MaxDeliver = 5 }), want: []problem{
			{refused: true, msg: "MaxDeliver 5; jetlake needs -1 (unlimited) so an outage never ends in max-deliveries drops: update the consumer's max_deliver to -1, or delete the consumer (jetlake re-creates it) or set streams[2].consumer to another name"},
		}},
		{name: "headers only", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) { h.HeadersOnly = true }), want: []problem{
			{refused: true, msg: "delivers headers only, without the message data"},
		}},
		{name: "pinned, not wanted", s: s, have: fitsPinned, want: []problem{
			{refused: true, msg: `priority policy pinned_client with groups [jetlake] does not fit failover = "", which needs none with groups []`},
		}},
		{name: "wanted pinned, has none", s: pinned, have: fits, want: []problem{
			{refused: true, msg: `priority policy none with groups [] does not fit failover = "pinned", which needs pinned_client with groups [jetlake]`},
			{msg: "pinned TTL 0s; jetlake sets it to 30s (streams[2].priority_timeout) on start"},
		}},
		{name: "pinned in another group", s: pinned, have: with(fitsPinned, func(h *jetstream.ConsumerConfig) { h.PriorityGroups = []string{"other"} }), want: []problem{
			{refused: true, msg: "priority policy pinned_client with groups [other]"},
		}},
		{name: "AckWait below twice max_file_age", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) { h.AckWait = 5 * time.Second }), want: []problem{
			{harmful: true, msg: "AckWait 5s is less than 2 × max_file_age (10s); jetlake sets it to 30s on start"},
		}},
		{name: "another AckWait", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) { h.AckWait = time.Minute }), want: []problem{
			{msg: "AckWait 1m; jetlake sets it to 30s (streams[2].ack_wait) on start"},
		}},
		{name: "MaxAckPending below a file", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) { h.MaxAckPending = 100 }), want: []problem{
			{harmful: true, msg: "MaxAckPending 100 is less than max_messages_per_file (500): files would be cut at 90% of it; jetlake sets it to 1000 on start"},
		}},
		{name: "MaxAckPending below the configured", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) { h.MaxAckPending = 800 }), want: []problem{
			{harmful: true, msg: "MaxAckPending 800 is less than 1000, what streams[2].max_ack_pending and the rotation limits ask for"},
		}},
		{name: "MaxAckPending above the configured", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) { h.MaxAckPending = 5000 }), want: []problem{
			{msg: "MaxAckPending 5000; jetlake sets it to 1000 on start"},
		}},
		{name: "other filters", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) { h.FilterSubject = "" }), want: []problem{
			{msg: "filter subjects (none: the whole stream); jetlake sets them to [orders.>] on start"},
		}},
		{name: "another pinned TTL", s: pinned, have: with(fitsPinned, func(h *jetstream.ConsumerConfig) { h.PinnedTTL = time.Minute }), want: []problem{
			{msg: "pinned TTL 1m; jetlake sets it to 30s (streams[2].priority_timeout) on start"},
		}},
		{name: "several at once, refusals first", s: s, have: with(fits, func(h *jetstream.ConsumerConfig) {
			h.AckPolicy, h.MaxDeliver, h.AckWait, h.MaxAckPending = jetstream.AckAllPolicy, 3, 2*time.Second, 10
		}), want: []problem{
			{msg: "AckPolicy all"},
			{refused: true, msg: "MaxDeliver 3"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mode := jsclient.ModeFor(jetstream.InterestPolicy)
			if tt.ackLess {
				mode = jsclient.ModeFor(jetstream.LimitsPolicy)
			}
			got := jsclient.CheckConsumer(c, tt.s, "streams[2]", tt.have, mode)
			if len(got) != len(tt.want) {
				t.Fatalf("%d problems, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Refused != w.refused || g.Harmful != w.harmful || !strings.Contains(g.Msg, w.msg) {
					t.Errorf("problem %d = %+v, want refused %v, harmful %v and %q", i, g, w.refused, w.harmful, w.msg)
				}
			}
		})
	}
}
