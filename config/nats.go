package config

import "strings"

// nats checks [nats]: the servers to connect to, how to authenticate and
// the JetStream API to use.
func (c *checker) nats(t map[string]any, p keyPath) NATS {
	c.unknown(t, p, &natsSpec)
	var n NATS
	n.URL = c.natsURL(t, p)
	c.natsFiles(t, p, &n)
	c.natsJetStream(t, p, &n)
	n.TokenEnv = c.envName(t, p, "token_env")
	n.PasswordEnv = c.envName(t, p, "password_env")
	c.natsAuth(p, n)
	n.AllowInsecureAuth, _ = c.boolean(t, p, "allow_insecure_auth", false)
	c.natsPlainSecret(p, n)
	c.natsCertPair(p, n)
	return n
}

// natsURL checks url, the comma-separated server URLs, and returns it, or
// "" when it is missing or wrong.
func (c *checker) natsURL(t map[string]any, p keyPath) string {
	const urlHelp = "give one or more server URLs separated by commas, such as \"nats://127.0.0.1:4222\""
	if !has(t, "url") {
		c.report(p.key("url"), "missing; %s", urlHelp)
		return ""
	}
	u, ok := c.str(t, p, "url", "")
	if !ok {
		return ""
	}
	switch why := checkNATSURLs(u); {
	case strings.TrimSpace(u) == "":
		c.report(p.key("url"), "is empty; %s", urlHelp)
	case why != "":
		c.report(p.key("url"), "%s", why)
	default:
		return u
	}
	return ""
}

// natsFiles reads the keys that name credentials and TLS files, the user
// and tls_required; their relations are checked later.
func (c *checker) natsFiles(t map[string]any, p keyPath, n *NATS) {
	n.CredsFile, _ = c.str(t, p, "creds_file", "")
	n.NkeySeedFile, _ = c.str(t, p, "nkey_seed_file", "")
	n.User, _ = c.str(t, p, "user", "")
	n.TLSCAFile, _ = c.str(t, p, "tls_ca_file", "")
	n.TLSCertFile, _ = c.str(t, p, "tls_cert_file", "")
	n.TLSKeyFile, _ = c.str(t, p, "tls_key_file", "")
	n.TLSRequired, _ = c.boolean(t, p, "tls_required", false)
}

// natsJetStream checks where the JetStream API and the reply inboxes are:
// jetstream_domain or jetstream_api_prefix (not both), and inbox_prefix.
func (c *checker) natsJetStream(t map[string]any, p keyPath, n *NATS) {
	if d, ok := c.str(t, p, "jetstream_domain", ""); ok && d != "" {
		if why := checkToken(d); why != "" {
			c.report(p.key("jetstream_domain"), "%q %s", d, why)
		}
		n.JetStreamDomain = d
	}
	if a, ok := c.str(t, p, "jetstream_api_prefix", ""); ok && a != "" {
		if why := checkSubject(a); why != "" || strings.ContainsAny(a, "*>") {
			c.report(p.key("jetstream_api_prefix"), "%q is not a subject prefix without wildcards, such as \"$JS.hub.API\"", a)
		}
		n.JetStreamAPIPrefix = a
	}
	if n.JetStreamDomain != "" && n.JetStreamAPIPrefix != "" {
		c.report(p.key("jetstream_api_prefix"), "set either jetstream_domain or jetstream_api_prefix, not both")
	}
	if ib, ok := c.str(t, p, "inbox_prefix", ""); ok && ib != "" {
		if why := checkSubject(ib); why != "" || strings.ContainsAny(ib, "*>") {
			c.report(p.key("inbox_prefix"), "%q is not a subject prefix without wildcards, such as \"_INBOX_jetlake\"", ib)
		}
		n.InboxPrefix = ib
	}
}

// natsAuth checks that n authenticates one way at most, and that a user
// and its password_env come together. TLS client certificates combine
// with any way.
func (c *checker) natsAuth(p keyPath, n NATS) {
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
func (c *checker) natsPlainSecret(p keyPath, n NATS) {
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
func (c *checker) natsCertPair(p keyPath, n NATS) {
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

// state checks [state]: where the exporter keeps its intents.
func (c *checker) state(t map[string]any, p keyPath) State {
	c.unknown(t, p, &stateSpec)
	st := State{Bucket: DefaultStateBucket, Replicas: 1}
	if b, ok := c.str(t, p, "bucket", DefaultStateBucket); ok {
		if why := checkToken(b); why != "" || b == "" {
			c.report(p.key("bucket"), "%q is not a key-value bucket name; allowed: letters, digits, '_' and '-', such as %q", b, DefaultStateBucket)
		}
		st.Bucket = b
	}
	if n, ok := c.integer(t, p, "replicas", 1); ok {
		if n < 1 || n > 5 {
			c.report(p.key("replicas"), "%d is out of range; allowed: 1 to 5 (3 on a JetStream cluster)", n)
		}
		st.Replicas = int(n)
	}
	return st
}
