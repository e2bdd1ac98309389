package lake

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
)

// VerifyConnector connects to connector c's object store and NATS servers
// and verifies its streams (Verify), for jetlake verify. A request NATS
// refuses stops it with the permission to add, rather than with the
// time-out it would end in.
func VerifyConnector(ctx context.Context, c *config.Connector, opts VerifyOptions) ([]*Report, error) {
	var perms jsclient.PermissionWatch
	store, js, closeNATS, err := connect(c, perms.Option())
	if err != nil {
		return nil, err
	}
	defer closeNATS()
	ctx, unwatch := perms.Context(ctx)
	defer unwatch()
	reports, err := Verify(ctx, c, js, store, opts)
	if denied := jsclient.Denied(ctx); denied != nil {
		return nil, denied
	}
	return reports, err
}

// CompactConnector connects to connector c's object store and NATS servers
// and compacts its table (Compact), for jetlake compact.
func CompactConnector(ctx context.Context, c *config.Connector, o CompactOptions) (*CompactReport, error) {
	store, js, closeNATS, err := connect(c)
	if err != nil {
		return nil, err
	}
	defer closeNATS()
	return Compact(ctx, c, js, store, o)
}

// connect opens the connector's object store and JetStream; closeNATS
// closes the NATS connection. extra are options of the connection.
func connect(c *config.Connector, extra ...nats.Option) (store *objstore.S3Store, js jetstream.JetStream, closeNATS func(), err error) {
	if store, err = objstore.NewS3Store(c.S3); err != nil {
		return nil, nil, nil, err
	}
	nc, err := jsclient.Dial(c, extra...)
	if err != nil {
		return nil, nil, nil, err
	}
	if js, err = jsclient.NewJetStream(nc, c.NATS); err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return store, js, nc.Close, nil
}
