package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckSubject(t *testing.T) {
	tests := []struct {
		in    string
		valid bool
	}{
		{"events", true},
		{"events.>", true},
		{"events.*.created", true},
		{"*", true},
		{">", true},
		{"a-b_c.D9", true},
		{"", false},
		{"events.", false},
		{".events", false},
		{"events..a", false},
		{"events.>.a", false},
		{"events.a*", false},
		{"events.>x", false},
		{"events a", false},
		{"events.\ta", false},
	}
	for _, tt := range tests {
		if got := checkSubject(tt.in) == ""; got != tt.valid {
			t.Errorf("checkSubject(%q) valid = %v, want %v", tt.in, got, tt.valid)
		}
	}
}

func TestCheckBucket(t *testing.T) {
	tests := []struct {
		in    string
		valid bool
	}{
		{"lake", true},
		{"my-lake.2026", true},
		{"abc", true},
		{strings.Repeat("a", 63), true},
		{"ab", false},
		{strings.Repeat("a", 64), false},
		{"Lake", false},
		{"my_lake", false},
		{"-lake", false},
		{"lake.", false},
		{"la..ke", false},
		{"la.-ke", false},
		{"10.0.0.1", false},
	}
	for _, tt := range tests {
		if got := checkBucket(tt.in) == ""; got != tt.valid {
			t.Errorf("checkBucket(%q) valid = %v, want %v", tt.in, got, tt.valid)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	tests := []struct {
		in    string
		valid bool
	}{
		{"", true},
		{"raw", true},
		{"raw/events", true},
		{"_jetlake", true},
		{"données/brut", true},
		{"/raw", false},
		{"raw/", false},
		{"raw//events", false},
		{"raw/./events", false},
		{"..", false},
		{"raw\\events", false},
		{"raw\nevents", false},
		{"raw\xffevents", false},
	}
	for _, tt := range tests {
		if got := checkPrefix(tt.in) == ""; got != tt.valid {
			t.Errorf("checkPrefix(%q) valid = %v, want %v", tt.in, got, tt.valid)
		}
	}
}

func TestCheckNATSURLs(t *testing.T) {
	tests := []struct {
		in    string
		valid bool
	}{
		{"nats://127.0.0.1:4222", true},
		{"nats://a:4222, tls://b:4443,ws://c:8080/ws,wss://d", true},
		{"nats://[::1]:4222", true},
		{"127.0.0.1:4222", false},
		{"localhost", false},
		{"http://a:4222", false},
		{"nats://", false},
		{"nats://a:4222,", false},
		{"nats://u:p@a:4222", false},
		{"nats://a:port", false},
	}
	for _, tt := range tests {
		if got := checkNATSURLs(tt.in) == ""; got != tt.valid {
			t.Errorf("checkNATSURLs(%q) valid = %v, want %v", tt.in, got, tt.valid)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	tests := []struct {
		in    string
		valid bool
	}{
		{"http://127.0.0.1:9000", true},
		{"https://minio.example.com/", true},
		{"minio:9000", false},
		{"s3.amazonaws.com", false},
		{"ftp://a", false},
		{"http://a/bucket", false},
		{"http://a?x=1", false},
		{"http://key:secret@a", false},
	}
	for _, tt := range tests {
		if got := checkEndpoint(tt.in) == ""; got != tt.valid {
			t.Errorf("checkEndpoint(%q) valid = %v, want %v", tt.in, got, tt.valid)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{2 * time.Minute, "2m"},
		{90 * time.Second, "1m30s"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{10 * time.Second, "10s"},
		{1500 * time.Millisecond, "1.5s"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.in); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzLoad feeds arbitrary bytes to Load as a connector file: it must not
// panic, every problem must point at a line of the file and name a key, and
// a connector it accepts must be fully resolved.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.toml")
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.toml")
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		conns, err := Load(path)
		if err == nil {
			if len(conns) != 1 {
				t.Fatalf("Load = %d connectors, want 1", len(conns))
			}
			checkResolved(t, conns[0])
			return
		}
		probs, ok := err.(Errors)
		if !ok || len(probs) == 0 {
			t.Fatalf("Load error is %T (%v), want non-empty Errors", err, err)
		}
		lines := strings.Count(string(src), "\n") + 1
		for _, p := range probs {
			if p.Line < 1 || p.Line > lines || p.Key == "" || p.Msg == "" || p.File != path || strings.Contains(p.Error(), "\n") {
				t.Fatalf("bad problem %+v in a file of %d lines", p, lines)
			}
		}
	})
}

func TestRedactURLHidesUserInformation(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://admin:Hunter2Pass@10.0.0.7:4222", "nats://REDACTED@10.0.0.7:4222"},
		{"nats://s3cr3tToken@10.0.0.7:4222", "nats://REDACTED@10.0.0.7:4222"},
		{"http://KEY:SECRET@minio:9000", "http://REDACTED@minio:9000"},
		{"http://KEY:SE/CR%ET@minio:9000", "http://REDACTED@minio:9000"},
		{"user:pa:ss@host", "REDACTED@host"},
		{"", ""},
		// Queries and fragments may hold secrets too.
		{"postgres://jetlake@db/lake?password=X&sslpassword=Y", "postgres://REDACTED@db/lake?REDACTED"},
		{"postgres://db/lake?sslmode=verify-full&password=X", "postgres://db/lake?REDACTED"},
		{"https://catalog.example.com/api?token=T", "https://catalog.example.com/api?REDACTED"},
		{"https://catalog.example.com/api#T", "https://catalog.example.com/api#REDACTED"},
		{"https://catalog.example.com/p?to=a@b", "https://catalog.example.com/p?REDACTED"},
		// A PostgreSQL driver ends user information at an '@' before any
		// '/', a '?' in the password included.
		{"postgres://jetlake:5?ss@db/lake", "postgres://REDACTED@db/lake"},
		{"postgres://jetlake:Hunter2@db/lake", "postgres://REDACTED@db/lake"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
