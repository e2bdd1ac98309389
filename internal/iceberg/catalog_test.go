package iceberg_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/iceberg"
)

// recorder is an HTTP server that records the requests it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD path Authorization-header body-has-secret"
}

func startRecorder(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" secret="+r.Form.Get("client_secret"))
		rec.mu.Unlock()
		if handler != nil {
			handler(w, r)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// restConfig answers GET /v1/config with overrides, POST /v1/oauth/tokens
// with a token, and any other request with a redirect to redirect when
// it is not empty.
func restConfig(overrides map[string]string, redirect *string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/config":
			json.NewEncoder(w).Encode(map[string]any{"defaults": map[string]string{}, "overrides": overrides})
		case r.URL.Path == "/v1/oauth/tokens":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"access_token": "exchanged", "token_type": "bearer", "expires_in": 3600})
		case *redirect != "":
			http.Redirect(w, r, *redirect+r.URL.Path, http.StatusTemporaryRedirect)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}
}

// A REST catalog's /v1/config, or a redirect, can name another host: the
// catalog's token, or its client credential, never goes there. Opening
// the catalog fails instead, saying why.
func TestARESTCatalogSendsItsCredentialsOnlyToItsOwnHost(t *testing.T) {
	for _, tt := range []struct {
		name       string
		credential bool // a client credential instead of a token
		overrides  func(elsewhere string) map[string]string
		redirect   bool
	}{
		{"uri override", false, func(e string) map[string]string { return map[string]string{"uri": e} }, false},
		{"uri override with skip-verify", false, func(e string) map[string]string {
			return map[string]string{"uri": strings.Replace(e, "http://", "https://", 1), "rest.tls.skip-verify": "true"}
		}, false},
		{"token endpoint override", true, func(e string) map[string]string { return map[string]string{"oauth2-server-uri": e + "/token"} }, false},
		{"legacy token endpoint override", true, func(e string) map[string]string { return map[string]string{"rest.authorization-url": e + "/token"} }, false},
		{"redirect", false, func(string) map[string]string { return map[string]string{} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			elsewhere := startRecorder(t, nil)
			redirect := ""
			if tt.redirect {
				redirect = elsewhere.URL
			}
			catalog := startRecorder(t, restConfig(tt.overrides(elsewhere.URL), &redirect))
			cfg := iceberg.Config{
				Catalog: "test", Type: "rest", URI: catalog.URL, Namespace: "lake", Table: "events",
				Warehouse: "s3://lake", S3: iceberg.S3{Region: "us-east-1"},
				REST: iceberg.REST{Token: "Hunter2"},
			}
			if tt.credential {
				cfg.REST = iceberg.REST{Credential: "jetlake:Hunter2"}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tbl, err := iceberg.Load(ctx, cfg)
			if err == nil {
				tbl.Close()
				t.Fatal("Load succeeded, want an error")
			}
			var fh *iceberg.ForeignHostError
			if !errors.As(err, &fh) || !strings.Contains(err.Error(), "credentials only to") {
				t.Fatalf("Load = %v, want a *ForeignHostError", err)
			}
			if got := elsewhere.requests(); len(got) > 0 {
				t.Fatalf("the other host got %d requests: %q", len(got), got)
			}
			if len(catalog.requests()) == 0 {
				t.Fatal("the catalog got no request")
			}
		})
	}
}

// A REST catalog on another host is reached over https only, with its
// certificate checked.
func TestARESTCatalogIsRefusedOverPlainHTTPOrAnUncheckedCertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := iceberg.Config{Catalog: "test", Type: "rest", URI: "http://catalog.example.com/api", Namespace: "lake", Table: "events", REST: iceberg.REST{Token: "Hunter2"}}
	if _, err := iceberg.Load(ctx, cfg); err == nil || !strings.Contains(err.Error(), "plain HTTP") {
		t.Errorf("Load over http to another host = %v, want it refused", err)
	}
	// A self-signed certificate is not trusted, whatever /v1/config says.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"overrides": map[string]string{"rest.tls.skip-verify": "true"}})
	}))
	defer srv.Close()
	cfg.URI = srv.URL
	if _, err := iceberg.Load(ctx, cfg); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Load from a self-signed server = %v, want a certificate error", err)
	}
}

// Errors of a PostgreSQL catalog are one line, and repeat nothing of the
// URI's query or user information.
func TestPostgresCatalogErrorsAreOneLineWithTheURIRedacted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// localhost has two addresses, and prefer tries TLS then plain text:
	// pgx reports each attempt on a line of its own. Nothing listens on
	// port 1.
	uri := "postgres://jetlake@localhost:1/lake?sslmode=prefer&application_name=Hunter2"
	_, err := iceberg.Load(ctx, iceberg.Config{Catalog: "test", URI: uri, Namespace: "lake", Table: "events", Warehouse: "s3://lake"})
	if err == nil {
		t.Fatal("Load succeeded, want a connection error")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "Hunter2") || !strings.Contains(msg, config.RedactURL(uri)) {
		t.Errorf("Load = %q, want one line naming %s", msg, config.RedactURL(uri))
	}
	// A URI pgx can not parse is not quoted either.
	uri = "postgres://jetlake@db/lake?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem&application_name=Hunter2"
	_, err = iceberg.Load(ctx, iceberg.Config{Catalog: "test", URI: uri, Namespace: "lake", Table: "events", Warehouse: "s3://lake"})
	if err == nil || strings.Contains(err.Error(), "Hunter2") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Load = %v, want an error without the URI's query", err)
	}
}

// A connector's [s3] tls_ca_file is the file IO's too: the table's
// metadata and data files go to an endpoint whose certificate a private CA
// signed.
func TestTheTableIsWrittenThroughAnS3EndpointOfAPrivateCA(t *testing.T) {
	e := newTableEnv(t, "sqlite")
	target, err := url.Parse(e.ms.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	// A TLS front for MinIO, with the test server's own certificate: the
	// Host header passes through, so request signatures still match.
	proxy := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	defer proxy.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	e.cfg.S3.Endpoint = proxy.URL

	// Without the CA the certificate is not trusted.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := iceberg.Open(ctx, e.cfg, formats.Fields(e.options)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Open without tls_ca_file = %v, want a certificate error", err)
	}
	e.cfg.S3.TLSCAFile = ca
	tbl := e.open()
	prefix := strings.TrimPrefix(tbl.Location(), "s3://"+e.bucket+"/") + "/metadata/"
	n := 0
	for obj := range e.mc.ListObjects(ctx, e.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no metadata file under %s", tbl.Location())
	}
}
