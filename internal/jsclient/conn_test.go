package jsclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetlake/jetlake/config"
)

// Files named in [nats] are read at every connect: a missing or malformed
// one is found before the first, not retried for ever.
func TestUnusableNATSFilesAreFoundBeforeConnecting(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("not a credentials file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name string
		nats config.NATS
		want string
	}{
		{"missing creds_file", config.NATS{CredsFile: missing}, "[nats]"},
		{"malformed creds_file", config.NATS{CredsFile: junk}, "creds_file"},
		{"missing nkey_seed_file", config.NATS{NkeySeedFile: missing}, "nkey_seed_file"},
		{"missing tls_ca_file", config.NATS{TLSCAFile: missing}, "[nats]"},
		{"malformed tls_ca_file", config.NATS{TLSCAFile: junk}, "[nats]"},
		{"missing tls_cert_file", config.NATS{TLSCertFile: missing, TLSKeyFile: missing}, "[nats]"},
	}
	for _, tt := range tests {
		_, err := natsOptions(tt.nats, "c")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: natsOptions = %v, want an error naming %s", tt.name, err, tt.want)
		}
	}
	if _, err := natsOptions(config.NATS{}, "c"); err != nil {
		t.Errorf("no files: %v", err)
	}
}
