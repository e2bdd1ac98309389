package config

import (
	"fmt"
	"strings"
)

// defaultInboxPrefix is the inbox prefix of the NATS client, which a
// connection without inbox_prefix uses.
const defaultInboxPrefix = "_INBOX"

const natsURLHelp = "give one or more server URLs separated by commas, such as \"nats://127.0.0.1:4222\""

// checkURL checks url, the comma-separated server URLs.
func checkURL(u string) string {
	if strings.TrimSpace(u) == "" {
		return "is empty; " + natsURLHelp
	}
	return checkNATSURLs(u)
}

// subjectPrefix is the check of a subject prefix without wildcards; eg is
// an example.
func subjectPrefix(eg string) func(string) string {
	return func(s string) string {
		if why := checkSubject(s); why != "" || strings.ContainsAny(s, "*>") {
			return fmt.Sprintf("%q is not a subject prefix without wildcards, such as %q", s, eg)
		}
		return ""
	}
}

// noCredentials is the note of password_env, the last of the ways to
// authenticate, when none is set.
func noCredentials(n *NATS) string {
	if n.CredsFile == "" && n.NkeySeedFile == "" && n.TokenEnv == "" && n.User == "" {
		return "no credentials: connects without authentication"
	}
	return ""
}

// natsCrossChecks checks the rules of [nats] that relate its keys: one
// JetStream API, one way to authenticate, a user with its password, no
// secret in plain text to a remote host, a client certificate with its
// key.
func (c *checker) natsCrossChecks(t map[string]any, p keyPath, n *NATS) {
	if n.JetStreamDomain != "" && n.JetStreamAPIPrefix != "" {
		c.report(p.key("jetstream_api_prefix"), "set either jetstream_domain or jetstream_api_prefix, not both")
	}
	c.natsAuth(p, n)
	c.natsPlainSecret(p, n)
	c.natsCertPair(p, n)
}

// natsAuth checks that n authenticates one way at most, and that a user
// and its password_env come together. TLS client certificates combine
// with any way.
func (c *checker) natsAuth(p keyPath, n *NATS) {
	auth := []struct{ key, value string }{
		{"creds_file", n.CredsFile},
		{"nkey_seed_file", n.NkeySeedFile},
		{"token_env", n.TokenEnv},
		{"user", n.User},
	}
	first := ""
	for _, a := range auth {
		if a.value == "" {
			continue
		}
		if first != "" {
			c.report(p.key(a.key), "can not be combined with %s; set at most one of creds_file, nkey_seed_file, token_env and user", first)
			continue
		}
		first = a.key
	}
	switch {
	case n.User != "" && n.PasswordEnv == "":
		c.report(p.key("user"), "needs password_env, the name of the environment variable that holds the password")
	case n.User == "" && n.PasswordEnv != "":
		c.report(p.key("password_env"), "needs user, the name to log in with")
	}
}

// natsPlainSecret reports a token or password that would go in plain text
// to a host that is not a loopback address, unless allow_insecure_auth
// says so or TLS is configured.
func (c *checker) natsPlainSecret(p keyPath, n *NATS) {
	if (n.TokenEnv == "" && n.PasswordEnv == "") || n.AllowInsecureAuth || n.TLSRequired || n.TLSCAFile != "" || n.TLSCertFile != "" {
		return
	}
	if u := plainRemoteURL(n.URL); u != "" {
		secret := "password"
		if n.TokenEnv != "" {
			secret = "token"
		}
		c.report(p.key("url"), "%q is plain text to a host that is not a loopback address: the %s would cross the network unencrypted; use tls:// or wss://, set tls_required = true or tls_ca_file, or set allow_insecure_auth = true", u, secret)
	}
}

// natsCertPair checks that a client certificate and its key come together.
func (c *checker) natsCertPair(p keyPath, n *NATS) {
	switch {
	case n.TLSCertFile != "" && n.TLSKeyFile == "":
		c.report(p.key("tls_cert_file"), "needs tls_key_file: a client certificate goes with its private key")
	case n.TLSCertFile == "" && n.TLSKeyFile != "":
		c.report(p.key("tls_key_file"), "needs tls_cert_file: a private key goes with its client certificate")
	}
}

// DefaultStateBucket is the JetStream key-value bucket holding the intents
// of uploads in flight when [state] names none.
const DefaultStateBucket = "jetlake_state"

// stateBucket checks the name of the [state] bucket.
func stateBucket(b string) string {
	if why := checkToken(b); why != "" || b == "" {
		return fmt.Sprintf("%q is not a key-value bucket name; allowed: letters, digits, '_' and '-', such as %q", b, DefaultStateBucket)
	}
	return ""
}

// redactURLs redacts each URL of a comma-separated list, as RedactURL
// does. The checker refuses URLs with credentials; this is the second
// guard.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		parts[i] = RedactURL(p)
	}
	return strings.Join(parts, ",")
}
