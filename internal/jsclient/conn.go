package jsclient

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
)

// Dial connects to the connector's NATS servers once, without the retries
// Run does; for commands that inspect rather than export. extra options
// come last (PermissionWatch.Option among them).
func Dial(cfg *config.Connector, extra ...nats.Option) (*nats.Conn, error) {
	opts, err := ConnectOptions(cfg.NATS, cfg.Name)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(cfg.NATS.URL, append(append(opts, nats.MaxReconnects(0)), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", cfg.NATS.URL, err)
	}
	return nc, nil
}

// ConnectOptions are the options of every connection to NATS: the [nats]
// settings, and only the servers url names. A server's INFO lists the
// other servers of its cluster, and the client would otherwise reconnect to
// those too: hosts the configuration never named, over nats:// in plain
// text when the server advertises that, with the password or token of
// [nats]. The configuration's checks (TLS, loopback) are of the URLs it
// names.
func ConnectOptions(c config.NATS, name string) ([]nats.Option, error) {
	opts, err := natsOptions(c, name)
	if err != nil {
		return nil, err
	}
	return append(opts, nats.IgnoreDiscoveredServers()), nil
}

// NewJetStream returns the JetStream context for the [nats] settings: the
// default API, a domain, or an API prefix.
func NewJetStream(nc *nats.Conn, c config.NATS) (jetstream.JetStream, error) {
	var js jetstream.JetStream
	var err error
	switch {
	case c.JetStreamDomain != "":
		js, err = jetstream.NewWithDomain(nc, c.JetStreamDomain)
	case c.JetStreamAPIPrefix != "":
		js, err = jetstream.NewWithAPIPrefix(nc, c.JetStreamAPIPrefix)
	default:
		js, err = jetstream.New(nc)
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return js, nil
}
