package exporter

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/internal/jsclient"
)

// connect dials NATS, retrying with backoff until it succeeds or ctx ends.
func (e *Exporter) connect(ctx context.Context) (*nats.Conn, error) {
	opts, err := jsclient.ConnectOptions(e.cfg.NATS, e.cfg.Name)
	if err != nil {
		return nil, err
	}
	log := e.log
	opts = append(opts,
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected; reconnecting", "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted()) }),
		// Client errors (a slow consumer) go to the log like everything
		// else, not raw to stderr; a permissions violation ends the Run.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if e.perms.Observe(err) {
				return
			}
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS client error", "subject", subject, "error", err)
		}),
	)
	var nc *nats.Conn
	err = retry(ctx, e.log, "NATS", func(context.Context) error {
		var err error
		nc, err = nats.Connect(e.cfg.NATS.URL, opts...)
		return jsclient.ClassifyConnect(e.cfg.NATS.URL, err)
	})
	return nc, err
}
