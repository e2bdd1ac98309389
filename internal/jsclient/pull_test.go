package jsclient

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The server appends its pin after the headers a message was published
// with: whatever a publisher put in Nats-Pin-Id comes first, and only the
// last value is the server's.
func TestServerPinIsTheHeadersLastValue(t *testing.T) {
	for _, tt := range []struct {
		h    nats.Header
		want string
	}{
		{nil, ""},
		{nats.Header{"Other": {"x"}}, ""},
		{nats.Header{PinHeader: {"real"}}, "real"},
		{nats.Header{PinHeader: {"forged", "real"}}, "real"},
		{nats.Header{PinHeader: {"a", "b", "real"}}, "real"},
		{nats.Header{PinHeader: {"", "real"}}, "real"},
		{nats.Header{PinHeader: {}}, ""},
		{nats.Header{"nats-pin-id": {"forged"}, PinHeader: {"real"}}, "real"},
	} {
		if got := ServerPin(tt.h); got != tt.want {
			t.Errorf("ServerPin(%v) = %q, want %q", tt.h, got, tt.want)
		}
	}
}

func TestAPIPrefixIsJetStreams(t *testing.T) {
	for _, tt := range []struct {
		o    jetstream.JetStreamOptions
		want string
	}{
		{jetstream.JetStreamOptions{}, "$JS.API."},
		{jetstream.JetStreamOptions{Domain: "hub"}, "$JS.hub.API."},
		{jetstream.JetStreamOptions{APIPrefix: "$JS.x.API"}, "$JS.x.API."},
		{jetstream.JetStreamOptions{APIPrefix: "$JS.x.API."}, "$JS.x.API."},
	} {
		if got := apiPrefix(tt.o); got != tt.want {
			t.Errorf("apiPrefix(%+v) = %q, want %q", tt.o, got, tt.want)
		}
	}
}

// A pulled message's metadata is read from its reply subject, in both
// layouts, as jetstream's are.
func TestPulledMessageMetadata(t *testing.T) {
	for _, tt := range []struct {
		reply string
		want  *jetstream.MsgMetadata
	}{
		{"$JS.ACK.EVENTS.c.3.42.17.1764399600123456789.5", &jetstream.MsgMetadata{
			Sequence: jetstream.SequencePair{Consumer: 17, Stream: 42}, NumDelivered: 3, NumPending: 5,
			Timestamp: time.Unix(0, 1764399600123456789), Stream: "EVENTS", Consumer: "c",
		}},
		{"$JS.ACK.hub.ACCHASH.EVENTS.c.2.7.8.1.9.rnd", &jetstream.MsgMetadata{
			Sequence: jetstream.SequencePair{Consumer: 8, Stream: 7}, NumDelivered: 2, NumPending: 9,
			Timestamp: time.Unix(0, 1), Stream: "EVENTS", Consumer: "c", Domain: "hub",
		}},
		{"$JS.ACK._.ACCHASH.EVENTS.c.2.7.8.1.9", &jetstream.MsgMetadata{
			Sequence: jetstream.SequencePair{Consumer: 8, Stream: 7}, NumDelivered: 2, NumPending: 9,
			Timestamp: time.Unix(0, 1), Stream: "EVENTS", Consumer: "c",
		}},
		{"$JS.ACK.EVENTS.c.x.42.17.1.5", nil},
		{"_INBOX.abc", nil},
	} {
		got, err := pulledMsg{m: &nats.Msg{Reply: tt.reply}}.Metadata()
		switch {
		case tt.want == nil && err == nil:
			t.Errorf("%s: metadata %+v, want an error", tt.reply, got)
		case tt.want != nil && err != nil:
			t.Errorf("%s: %v", tt.reply, err)
		case tt.want != nil && (*got != *tt.want || !got.Timestamp.Equal(tt.want.Timestamp)):
			t.Errorf("%s: metadata %+v, want %+v", tt.reply, got, tt.want)
		}
	}
}
