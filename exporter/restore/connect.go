package restore

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
)

// Conns are the connections a restore of one connector works through,
// what Run takes: the connector's object store, which it reads, and
// JetStream where the target stream is.
type Conns struct {
	Store objstore.ObjectReader
	JS    jetstream.JetStream // nil without a target (a dry run)

	nc *nats.Conn
}

// Connect opens the connections a restore of connector c works through,
// for jetlake restore. It connects to NATS only when target is true: to
// natsURL, or to the connector's own [nats] url when natsURL is empty,
// with the connector's credentials either way, and reconnecting for as
// long as the restore runs. Close closes what it opened.
func Connect(c *config.Connector, natsURL string, target bool) (*Conns, error) {
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		return nil, err
	}
	cs := &Conns{Store: store}
	if !target {
		return cs, nil
	}
	tc := *c
	if natsURL != "" {
		tc.NATS.URL = natsURL
	}
	if cs.nc, err = jsclient.Dial(&tc, nats.MaxReconnects(-1)); err != nil {
		return nil, err
	}
	if cs.JS, err = jsclient.NewJetStream(cs.nc, tc.NATS); err != nil {
		cs.nc.Close()
		return nil, err
	}
	return cs, nil
}

// Close closes the NATS connection Connect opened, if any.
func (cs *Conns) Close() {
	if cs.nc != nil {
		cs.nc.Close()
	}
}
