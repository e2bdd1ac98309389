package config

import (
	"fmt"
	"net/url"
	"strings"
)

// postgresSecretParams are the query parameters of a PostgreSQL URI that
// hold a secret, or name a key that goes with one, and what to do instead.
// The driver reads each from the environment as well.
var postgresSecretParams = map[string]string{
	"password":    "set PGPASSWORD in the environment of jetlake, or use a password file (~/.pgpass, or PGPASSFILE)",
	"sslpassword": "set PGSSLPASSWORD in the environment of jetlake",
	"sslkey":      "a client key goes with its password, which is never in the file: set PGSSLKEY (and PGSSLPASSWORD when the key is encrypted) in the environment of jetlake",
}

// isPostgresURI reports whether uri names a PostgreSQL database.
func isPostgresURI(uri string) bool {
	return strings.HasPrefix(uri, "postgres://") || strings.HasPrefix(uri, "postgresql://")
}

// pgURI is a PostgreSQL URI as the driver (pgx, like libpq) reads it.
type pgURI struct {
	password bool              // the user information holds a password (or a ':')
	hosts    []string          // in order; a Unix socket's directory starts with "/"
	params   []string          // query parameter names, in order, as written
	settings map[string]string // query parameters; the last of a name wins
}

// parsePostgresURI reads uri the way pgx v5 does (pgconn/parse_url.go),
// so that the hosts and the sslmode checked are the ones connected with:
// user information ends at an '@' before any '/', hosts are a
// comma-separated list of host[:port] or [ipv6][:port], a host query
// parameter replaces them, and ssl=true after the last sslmode means
// sslmode=require.
func parsePostgresURI(uri string) (pgURI, error) {
	var u pgURI
	p, ok := strings.CutPrefix(uri, "postgresql://")
	if !ok {
		p, ok = strings.CutPrefix(uri, "postgres://")
	}
	if !ok {
		return u, fmt.Errorf("not a postgres:// URI")
	}
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		u.password = strings.Contains(p[:i], ":")
		p = p[i+1:]
	}
	hosts, p, err := cutPostgresHosts(p)
	if err != nil {
		return u, err
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[i+1:]
	} else {
		p = ""
	}
	if err := u.parseQuery(p); err != nil {
		return u, err
	}
	if h, ok := u.settings["host"]; ok {
		hosts = strings.Split(h, ",")
	}
	for _, h := range hosts {
		if h, err := url.PathUnescape(h); err == nil && strings.TrimSpace(h) != "" {
			u.hosts = append(u.hosts, strings.TrimSpace(h))
		}
	}
	return u, nil
}

// cutPostgresHosts cuts the comma-separated host[:port] or [ipv6][:port]
// list at the start of p, after the user information, and returns the
// hosts as written (ports dropped) and the rest of p.
func cutPostgresHosts(p string) (hosts []string, rest string, err error) {
	for {
		if strings.HasPrefix(p, "[") {
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return hosts, p, fmt.Errorf("an IPv6 address without its closing ]")
			}
			hosts = append(hosts, p[1:end])
			p = p[end+1:]
		} else {
			i := strings.IndexAny(p, ":/?,")
			if i < 0 {
				i = len(p)
			}
			hosts = append(hosts, p[:i])
			p = p[i:]
		}
		if strings.HasPrefix(p, ":") {
			i := strings.IndexAny(p, "/?,")
			if i < 0 {
				i = len(p)
			}
			p = p[i:]
		}
		if !strings.HasPrefix(p, ",") {
			return hosts, p, nil
		}
		p = p[1:]
	}
}

// parseQuery reads query, the part of a URI after its '?', into u.params
// and u.settings: dbname is database, and ssl=true after the last sslmode
// means sslmode=require.
func (u *pgURI) parseQuery(query string) error {
	u.settings = map[string]string{}
	sslLast := false
	for _, pair := range strings.Split(query, "&") {
		if pair == "" && query == "" {
			break
		}
		rawKey, rawValue, found := strings.Cut(pair, "=")
		if !found || strings.Contains(rawValue, "=") {
			return fmt.Errorf("query parameter %q is not one key=value pair", rawKey)
		}
		key, err := url.PathUnescape(rawKey)
		if err != nil {
			return fmt.Errorf("query parameter %q: %w", rawKey, err)
		}
		value, err := url.PathUnescape(rawValue)
		if err != nil {
			return fmt.Errorf("query parameter %s: its value is not percent-encoded correctly", key)
		}
		key = strings.TrimSpace(key)
		if key == "dbname" {
			key = "database"
		}
		switch key {
		case "ssl":
			sslLast = true
		case "sslmode":
			sslLast = false
		}
		u.params = append(u.params, key)
		u.settings[key] = strings.TrimSpace(value)
	}
	if u.settings["ssl"] == "true" {
		delete(u.settings, "ssl")
		if sslLast {
			u.settings["sslmode"] = "require"
		}
	}
	return nil
}

// postgresURI checks the uri of a PostgreSQL catalog: no secret in it, and
// a verified TLS connection to any host that is not this machine, unless
// allow_insecure_sslmode says otherwise.
func (c *checker) postgresURI(p keyPath, uri string, allowInsecure bool) {
	key := p.key("uri")
	u, err := parsePostgresURI(uri)
	if err != nil {
		c.report(key, "%q is not a PostgreSQL URI (%v); write postgres://user@host:port/database?sslmode=verify-full", RedactURL(uri), err)
		return
	}
	if u.password {
		c.report(key, "%q holds a password: "+neverSecrets+"set PGPASSWORD in the environment", RedactURL(uri))
	}
	seen := map[string]bool{}
	for _, k := range u.params {
		what, ok := postgresSecretParams[strings.ToLower(k)]
		if ok && !seen[k] {
			c.report(key, "%q has the query parameter %s: "+neverSecrets+"%s", RedactURL(uri), k, what)
		}
		seen[k] = true
	}
	if allowInsecure {
		return
	}
	remote := ""
	for _, h := range u.hosts {
		if !strings.HasPrefix(h, "/") && !isLoopback(h) {
			remote = h
			break
		}
	}
	mode, set := u.settings["sslmode"]
	if len(u.hosts) > 0 && remote == "" || mode == "verify-full" || mode == "verify-ca" {
		return
	}
	have := "sslmode=" + mode
	if !set {
		have = "no sslmode (the driver's default is prefer)"
	}
	where := fmt.Sprintf("the host %s is not a loopback address", remote)
	if len(u.hosts) == 0 {
		where = "it names no host, so the host comes from the environment (PGHOST) and may be another machine"
	}
	c.report(key, "%q has %s, and %s: the connection would not check the server's certificate, or not use TLS at all, and the password could go to whoever answers; add sslmode=verify-full (or verify-ca) to the uri, with sslrootcert=/path/to/ca.pem for a private CA, or set allow_insecure_sslmode = true",
		RedactURL(uri), have, where)
}
