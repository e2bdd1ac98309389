package exporter_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/jsclient"
)

// testCert is a certificate and its key, written as PEM files.
type testCert struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	pemFile string
	keyFile string
}

// writeCert writes a certificate for 127.0.0.1 and its key: a CA of its own
// when parent is nil, else one that parent signs.
func writeCert(t *testing.T, name string, parent *testCert) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "jetlake test " + name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	signer, signerKey := tpl, key
	if parent == nil {
		tpl.IsCA, tpl.BasicConstraintsValid = true, true
		tpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &testCert{cert: cert, key: key, pemFile: filepath.Join(dir, name+".pem"), keyFile: filepath.Join(dir, name+".key")}
	if err := os.WriteFile(c.pemFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// docs/configuration.md ([nats]) says tls_ca_file, or a client certificate,
// alone turns TLS on: a nats:// URL to a server that offers no TLS is
// refused, never used in plain text.
func TestTLSSettingsAloneRefuseAServerWithoutTLS(t *testing.T) {
	t.Parallel()
	ns := shared.NATS(t)
	ca := writeCert(t, "ca", nil)
	cert, key := ca.pemFile, ca.keyFile
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
		nc, err := jsclient.Dial(c)
		if err == nil {
			nc.Close()
		}
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("%s: Dial = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// A server certificate this connector does not trust is permanent: Run
// stops with what to fix instead of retrying for ever.
func TestUntrustedServerCertificateStopsTheExporter(t *testing.T) {
	t.Parallel()
	serverCA, otherCA := writeCert(t, "server-ca", nil), writeCert(t, "other-ca", nil)
	server := writeCert(t, "server", serverCA)
	conf := filepath.Join(t.TempDir(), "nats.conf")
	body := fmt.Sprintf("tls {\n  cert_file: %q\n  key_file: %q\n}\nallow_non_tls: true\n", server.pemFile, server.keyFile)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := exportertest.NATS(t, exportertest.NATSOptions{Args: []string{"-c", conf}})
	e := newEnv(t, ns, shared.MinIO(t), `max_file_age = "1s"`)
	c := e.connector()
	// Trusted, the server is used over TLS.
	c.NATS.TLSCAFile = serverCA.pemFile
	nc, err := jsclient.Dial(c)
	if err != nil {
		t.Fatalf("with the server's CA: %v", err)
	}
	if _, err := nc.TLSConnectionState(); err != nil {
		t.Fatalf("with the server's CA: not TLS: %v", err)
	}
	nc.Close()

	c.NATS.TLSCAFile = otherCA.pemFile
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done, _ := e.run(ctx, c, false)
	err = <-done
	if !failure.IsPermanent(err) || !strings.Contains(err.Error(), "tls_ca_file") || ctx.Err() != nil {
		t.Fatalf("Run with another CA = %v, want a permanent error naming tls_ca_file", err)
	}
}
