package jsclient

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/failure"
)

func TestClassifyConnectStopsOnlyWhatRetryingDoesNotMend(t *testing.T) {
	tests := []struct {
		err       error
		permanent bool
		says      string
	}{
		{nil, false, ""},
		{nats.ErrNoServers, false, ""},
		{fmt.Errorf("dial: %w", nats.ErrAuthorization), true, "check the credentials in [nats]"},
		{nats.ErrAuthExpired, true, "check the credentials in [nats]"},
		{fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), true, "check tls_ca_file in [nats]"},
		{x509.HostnameError{Certificate: &x509.Certificate{}, Host: "nats.example"}, true, "the host name in url"},
	}
	for _, tt := range tests {
		got := ClassifyConnect("nats://h:4222", tt.err)
		if failure.IsPermanent(got) != tt.permanent {
			t.Errorf("ClassifyConnect(%v) = %v, permanent %v, want %v", tt.err, got, !tt.permanent, tt.permanent)
			continue
		}
		if !tt.permanent {
			if got != tt.err {
				t.Errorf("ClassifyConnect(%v) = %v, want it as it was", tt.err, got)
			}
			continue
		}
		if !errors.Is(got, tt.err) || !strings.HasPrefix(got.Error(), "nats nats://h:4222: ") || !strings.Contains(got.Error(), tt.says) {
			t.Errorf("ClassifyConnect(%v) = %q, want the url, the error and %q", tt.err, got, tt.says)
		}
	}
}

func TestRefusedTellsARefusalFromAServerNotReady(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("connection refused"), false},
		{nats.ErrTimeout, false},
		{&jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, false},
		{&jetstream.APIError{Code: 500, Description: "insufficient resources"}, false},
		{&jetstream.APIError{Code: 404, Description: "stream not found"}, true},
		{fmt.Errorf("stream S: %w", &jetstream.APIError{Code: 400, Description: "consumer name in subject does not match"}), true},
	}
	for _, tt := range tests {
		if got := Refused(tt.err); got != tt.want {
			t.Errorf("Refused(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
