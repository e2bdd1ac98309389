package config

import (
	"strings"
	"testing"
)

// A PostgreSQL catalog URI holds no secret, and reaches a server on another
// machine only with sslmode=verify-full or verify-ca, reading hosts and
// sslmode the way the driver does.
func TestPostgresURIsAreCheckedAsTheDriverReadsThem(t *testing.T) {
	tests := []struct {
		uri      string
		insecure bool
		want     string // in the problem; "" for none
	}{
		{"postgres://jetlake@127.0.0.1:5432/lake?sslmode=disable", false, ""},
		{"postgres://jetlake@localhost/lake", false, ""},
		{"postgres://jetlake@[::1]:5432/lake?sslmode=prefer", false, ""},
		{"postgres://jetlake@/lake?host=/var/run/postgresql", false, ""},
		{"postgres://jetlake@db:5432/lake?sslmode=verify-full", false, ""},
		{"postgresql://jetlake@db1,db2:5433/lake?sslmode=verify-ca&sslrootcert=/etc/ca.pem", false, ""},
		{"postgres://jetlake@db:5432/lake", false, "has no sslmode"},
		{"postgres://jetlake@db:5432/lake?sslmode=require", false, "has sslmode=require, and the host db is not"},
		{"postgres://jetlake@db:5432/lake?sslmode=require", true, ""},
		{"postgres://jetlake@127.0.0.1,db/lake?sslmode=prefer", false, "the host db is not"},
		{"postgres://jetlake@[2001:db8::1]/lake?sslmode=allow", false, "the host 2001:db8::1 is not"},
		// The host parameter replaces the hosts before it.
		{"postgres://jetlake@127.0.0.1/lake?host=db&sslmode=disable", false, "the host db is not"},
		{"postgres://jetlake@db/lake?host=127.0.0.1&sslmode=disable", false, ""},
		// The last sslmode wins, and ssl=true after it means require.
		{"postgres://jetlake@db/lake?sslmode=verify-full&sslmode=disable", false, "sslmode=disable"},
		{"postgres://jetlake@db/lake?sslmode=verify-full&ssl=true", false, "sslmode=require"},
		{"postgres://jetlake@db/lake?ssl=true&sslmode=verify-full", false, ""},
		// An '@' before any '/' ends the user information, even after a '?'.
		{"postgres://127.0.0.1?x=@db/lake", false, "the host db is not"},
		{"postgres:///lake", false, "names no host"},
		{"postgres:///lake?sslmode=verify-full", false, ""},
		{"postgres://jetlake:Hunter2@db/lake?sslmode=verify-full", false, "holds a password"},
		{"postgres://jetlake@db/lake?sslmode=verify-full&password=Hunter2", false, "query parameter password: secrets are never read from the file; set PGPASSWORD"},
		{"postgres://jetlake@db/lake?sslmode=verify-full&Password=Hunter2", false, "query parameter Password"},
		{"postgres://jetlake@db/lake?sslmode=verify-full&sslpassword=Hunter2", true, "PGSSLPASSWORD"},
		{"postgres://jetlake@db/lake?sslmode=verify-full&sslkey=/k.pem&sslcert=/c.pem", false, "PGSSLKEY"},
		{"postgres://jetlake@db/lake?sslmode", false, "not one key=value pair"},
	}
	for _, tt := range tests {
		c := &checker{file: "f.toml", lines: locate("")}
		c.postgresURI(keyPath{}.key("iceberg"), tt.uri, tt.insecure)
		got := c.probs.Error()
		if len(c.probs) == 0 {
			got = ""
		}
		switch {
		case tt.want == "" && got != "":
			t.Errorf("%s (insecure %t): %s, want no problem", tt.uri, tt.insecure, got)
		case tt.want != "" && !strings.Contains(got, tt.want):
			t.Errorf("%s (insecure %t): %q, want a problem with %q", tt.uri, tt.insecure, got, tt.want)
		}
		if strings.Contains(got, "Hunter2") {
			t.Errorf("%s: the problem repeats the password: %s", tt.uri, got)
		}
	}
}
