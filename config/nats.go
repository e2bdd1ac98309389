package config

import "strings"

func (c *checker) nats(t map[string]any, p keyPath) NATS {
	c.unknown(t, p, &natsSpec)
	var n NATS
	const urlHelp = "give one or more server URLs separated by commas, such as \"nats://127.0.0.1:4222\""
	if !has(t, "url") {
		c.report(p.key("url"), "missing; %s", urlHelp)
	} else if u, ok := c.str(t, p, "url", ""); ok {
		switch why := checkNATSURLs(u); {
		case strings.TrimSpace(u) == "":
			c.report(p.key("url"), "is empty; %s", urlHelp)
		case why != "":
			c.report(p.key("url"), "%s", why)
		default:
			n.URL = u
		}
	}

	n.CredsFile, _ = c.str(t, p, "creds_file", "")
	n.NkeySeedFile, _ = c.str(t, p, "nkey_seed_file", "")
	n.User, _ = c.str(t, p, "user", "")
	n.TLSCAFile, _ = c.str(t, p, "tls_ca_file", "")
	n.TLSCertFile, _ = c.str(t, p, "tls_cert_file", "")
	n.TLSKeyFile, _ = c.str(t, p, "tls_key_file", "")
	n.TLSRequired, _ = c.boolean(t, p, "tls_required", false)
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
	n.TokenEnv = c.envName(t, p, "token_env")
	n.PasswordEnv = c.envName(t, p, "password_env")

	// One way to authenticate; TLS client certificates combine with any.
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
	n.AllowInsecureAuth, _ = c.boolean(t, p, "allow_insecure_auth", false)
	if (n.TokenEnv != "" || n.PasswordEnv != "") && !n.AllowInsecureAuth && !n.TLSRequired && n.TLSCAFile == "" && n.TLSCertFile == "" {
		if u := plainRemoteURL(n.URL); u != "" {
			secret := "password"
			if n.TokenEnv != "" {
				secret = "token"
			}
			c.report(p.key("url"), "%q is plain text to a host that is not a loopback address: the %s would cross the network unencrypted; use tls:// or wss://, set tls_required = true or tls_ca_file, or set allow_insecure_auth = true", u, secret)
		}
	}
	switch {
	case n.TLSCertFile != "" && n.TLSKeyFile == "":
		c.report(p.key("tls_cert_file"), "needs tls_key_file: a client certificate goes with its private key")
	case n.TLSCertFile == "" && n.TLSKeyFile != "":
		c.report(p.key("tls_key_file"), "needs tls_cert_file: a private key goes with its client certificate")
	}
	return n
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
