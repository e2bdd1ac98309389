package iceberg

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/jetlake/jetlake/config"
)

// ForeignHostError is the error of a REST catalog request that jetlake
// refused to send: to another scheme or host than the configured URI's.
// A catalog's /v1/config may move the catalog ("uri") or its token
// endpoint ("oauth2-server-uri"), and a response may redirect; either
// would carry the catalog's token or client credential elsewhere.
type ForeignHostError struct {
	Allowed string // scheme://host:port of the [iceberg] uri
	Host    string // scheme://host:port of the refused request
	Via     string // what named it: a /v1/config key, or "a redirect or the catalog"
}

// Error says what was refused and why.
func (e *ForeignHostError) Error() string {
	return fmt.Sprintf("iceberg REST catalog: refused to send a request to %s, named by %s: jetlake sends the catalog's credentials only to %s, the host of [iceberg] uri; set uri to the catalog's own address, or have the catalog stop pointing elsewhere",
		e.Host, e.Via, e.Allowed)
}

// restTransport is the transport of a REST catalog. It sends requests only
// to the scheme and host of the configured URI, with the certificate
// checked, whatever the catalog's /v1/config says (iceberg-go applies its
// uri, oauth2-server-uri and rest.tls.skip-verify) and wherever a response
// redirects: no token or credential goes to another host, or unencrypted
// to one that is not this machine.
type restTransport struct {
	origin string // scheme://host:port
	next   *http.Transport
}

// newRESTTransport returns the transport for the catalog at uri, which
// must be https, or http to a loopback address.
func newRESTTransport(uri string) (*restTransport, error) {
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("iceberg REST catalog %s: not an http:// or https:// URL", config.RedactURL(uri))
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("iceberg REST catalog %s: plain HTTP to a host that is not a loopback address; use https://", config.RedactURL(uri))
	}
	return &restTransport{
		origin: origin(u),
		// A transport of its own: the TLS settings of no other client
		// apply, and none can turn verification off.
		next: &http.Transport{
			Proxy:             http.ProxyFromEnvironment,
			TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: true,
		},
	}, nil
}

// RoundTrip sends r when it goes to the catalog's own origin. The answer
// of GET /v1/config is checked for keys that would move the catalog or its
// token endpoint to another origin: the catalog is refused then, before
// any credential follows.
func (t *restTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if o := origin(r.URL); o != t.origin {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, &ForeignHostError{Allowed: t.origin, Host: o, Via: "a redirect or the catalog"}
	}
	rsp, err := t.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/v1/config") || rsp.StatusCode != http.StatusOK {
		return rsp, err
	}
	body, err := io.ReadAll(io.LimitReader(rsp.Body, 16<<20))
	rsp.Body.Close()
	if err != nil {
		return nil, err
	}
	rsp.Body = io.NopCloser(bytes.NewReader(body))
	var cfg struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
	}
	if json.Unmarshal(body, &cfg) != nil {
		return rsp, nil // iceberg-go reports what is wrong with it
	}
	for _, layer := range []struct {
		name  string
		props map[string]string
	}{{"defaults", cfg.Defaults}, {"overrides", cfg.Overrides}} {
		for _, key := range []string{"uri", "oauth2-server-uri", "rest.authorization-url"} {
			v, ok := layer.props[key]
			if !ok {
				continue
			}
			u, err := url.Parse(v)
			if err != nil || origin(u) != t.origin {
				rsp.Body.Close()
				host := "an unparsable URL"
				if err == nil {
					host = origin(u)
				}
				return nil, &ForeignHostError{Allowed: t.origin, Host: host, Via: "the " + key + " of the catalog's /v1/config " + layer.name}
			}
		}
	}
	return rsp, nil
}

// CloseIdleConnections closes the connections kept for reuse.
func (t *restTransport) CloseIdleConnections() { t.next.CloseIdleConnections() }

// origin is scheme://host:port of u, lowercase, the port filled in.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// loopback reports whether host names this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
