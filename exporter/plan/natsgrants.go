package plan

import (
	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/statekey"
)

// NATSAPIPrefix is the JetStream API prefix connector c's requests go to,
// with a trailing dot: "$JS.API.", "$JS.<domain>.API." or the configured
// jetstream_api_prefix: most of the NATS permissions jetlake plan prints
// are subjects under it.
func NATSAPIPrefix(c *config.Connector) string { return jsclient.APIPrefix(c.NATS) }

// StateWriteSubject is the subject every key connector c writes to its
// state bucket matches, "$KV.<bucket>.*.<connector>.>" with the
// connector's name encoded as a key token: credentials granted only this
// can not write another connector's state, even in a bucket they share.
// A jetstream_api_prefix other than the default goes before it.
func StateWriteSubject(c *config.Connector) string {
	return "$KV." + c.State.Bucket + "." + statekey.Writes(c.Name)
}
