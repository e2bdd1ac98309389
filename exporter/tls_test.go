package exporter_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
)

// writeCA writes a self-signed CA certificate as PEM and returns its path.
func writeCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jetlake test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The README says tls_ca_file alone turns TLS on: a nats:// URL to a server
// that offers no TLS is refused, never used in plain text.
func TestTLSCAFileAloneRefusesAServerWithoutTLS(t *testing.T) {
	ns := shared.NATS(t)
	c := &config.Connector{Name: "tls", NATS: config.NATS{URL: ns.URL}}
	nc, err := exporter.Dial(c)
	if err != nil {
		t.Fatalf("without tls_ca_file: %v", err)
	}
	nc.Close()
	c.NATS.TLSCAFile = writeCA(t)
	nc, err = exporter.Dial(c)
	if err == nil {
		nc.Close()
		t.Fatal("with tls_ca_file, a server without TLS was used in plain text")
	}
	if !errors.Is(err, nats.ErrSecureConnWanted) {
		t.Fatalf("with tls_ca_file: %v, want %v", err, nats.ErrSecureConnWanted)
	}
}
