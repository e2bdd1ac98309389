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

// writeCA writes a self-signed CA certificate and its key as PEM and
// returns their paths.
func writeCA(t *testing.T) (cert, keyFile string) {
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
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, keyFile
}

// The README says tls_ca_file, or a client certificate, alone turns TLS
// on: a nats:// URL to a server that offers no TLS is refused, never used
// in plain text.
func TestTLSSettingsAloneRefuseAServerWithoutTLS(t *testing.T) {
	ns := shared.NATS(t)
	cert, key := writeCA(t)
	for _, tt := range []struct {
		name string
		tls  config.NATS
		want error
	}{
		{"no TLS setting", config.NATS{}, nil},
		{"tls_ca_file", config.NATS{TLSCAFile: cert}, nats.ErrSecureConnWanted},
		{"tls_cert_file", config.NATS{TLSCertFile: cert, TLSKeyFile: key}, nats.ErrSecureConnWanted},
	} {
		c := &config.Connector{Name: "tls", NATS: tt.tls}
		c.NATS.URL = ns.URL
		nc, err := exporter.Dial(c)
		if err == nil {
			nc.Close()
		}
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("%s: Dial = %v, want %v", tt.name, err, tt.want)
		}
	}
}
