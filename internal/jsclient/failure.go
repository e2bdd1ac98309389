package jsclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/failure"
)

// How NATS's errors are classified: a connection the server refuses for
// good, a JetStream request it refuses as made. Permissions violations
// are PermissionWatch's.

// ClassifyConnect returns err, an error of connecting to the server at
// url, as a *failure.Permanent that says what to fix when retrying will
// not mend it: refused credentials, or a server certificate the connector
// does not trust. Other errors are returned as they are.
func ClassifyConnect(url string, err error) error {
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

// Refused reports whether err holds the answer of a JetStream API request
// the server refused as it was made, with a code below 500 (no such
// stream, a setting it rejects): asking again the same way gets the same
// answer. An answer of 500 or more (JetStream not ready yet) and an error
// without an answer are not refusals.
func Refused(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.Code < 500
}
