package state

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestPutPrefixFollowsTheJetStreamContext(t *testing.T) {
	for _, tt := range []struct {
		opts jetstream.JetStreamOptions
		want string
	}{
		{jetstream.JetStreamOptions{APIPrefix: jetstream.DefaultAPIPrefix}, "$KV.st."},
		{jetstream.JetStreamOptions{}, "$KV.st."},
		{jetstream.JetStreamOptions{Domain: "hub"}, "$JS.hub.API.$KV.st."},
		{jetstream.JetStreamOptions{APIPrefix: "imported.JS"}, "imported.JS.$KV.st."},
		{jetstream.JetStreamOptions{APIPrefix: "imported.JS."}, "imported.JS.$KV.st."},
	} {
		if got := putPrefix(tt.opts, "st"); got != tt.want {
			t.Errorf("putPrefix(%+v) = %q, want %q", tt.opts, got, tt.want)
		}
	}
}
