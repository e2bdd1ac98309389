package exporter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/exporter/jsclient"
	"github.com/jetlake/jetlake/internal/failure"
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
		return natsPermanent(e.cfg.NATS.URL, err)
	})
	return nc, err
}

// natsPermanent marks a connection error that retrying will not mend as a
// *failure.Permanent that says what to fix: refused credentials, or a server
// certificate this connector does not trust. Other errors are returned as
// they are.
func natsPermanent(url string, err error) error {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired):
		return &failure.Permanent{Err: fmt.Errorf("nats %s: %w: check the credentials in [nats]", url, err)}
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return &failure.Permanent{Err: fmt.Errorf("nats %s: %w: the server's certificate is not trusted; check tls_ca_file in [nats] and the host name in url", url, err)}
	}
	return err
}
