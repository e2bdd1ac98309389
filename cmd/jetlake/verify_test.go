package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// verifyEnv exports 30 messages over three subjects of a new stream as raw
// objects with gzip, and returns a directory config with that connector ("b-raw") after
// one ("a-broken") whose stream does not exist.
func verifyEnv(t *testing.T, name string) (dir string, creds []string) {
	t.Helper()
	ctx := context.Background()
	natsSrv, minioSrv := shared.NATS(t), shared.MinIO(t)
	js := streamAndBucket(t, natsSrv, minioSrv, name, jetstream.StreamConfig{})
	for i := range 30 {
		if _, err := js.Publish(ctx, fmt.Sprintf("%s.s%d", name, i%3), []byte(fmt.Sprintf("payload %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	connector := func(connName, stream string) string {
		return fmt.Sprintf(`name = %q
[nats]
url = %q
[[streams]]
stream = %q
[s3]
bucket = %q
endpoint = %q
prefix = %q
[output]
format = "raw"
compression = "gzip"
`, connName, natsSrv.URL, stream, name, minioSrv.Endpoint, connName)
	}
	dir = t.TempDir()
	for name, body := range map[string]string{
		"a-broken.toml": connector("a-broken", "NOSUCHSTREAM"),
		"b-raw.toml":    connector("b-raw", strings.ToUpper(name)),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	creds = minioSrv.ClientEnv()
	if code, _, stderr := jetlakeEnv(t, creds, "run", "-until-idle", "-config", filepath.Join(dir, "b-raw.toml")); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	return dir, creds
}

func TestVerifyDeepChecksRawObjectsFromMetadataAndReportsEveryConnector(t *testing.T) {
	dir, creds := verifyEnv(t, "vraw")
	code, stdout, stderr := jetlakeEnv(t, creds, "verify", "-deep", "-quiet", "-config", dir)
	if code != exitFailure {
		t.Errorf("verify exit %d, want %d: the broken connector was not checked", code, exitFailure)
	}
	raw, _, found := strings.Cut(stdout, "connector b-raw")
	for _, want := range []string{"connector a-broken: NOT CHECKED", "NOSUCHSTREAM"} {
		if !strings.Contains(raw, want) {
			t.Errorf("verify output before b-raw lacks %q:\n%s\n%s", want, stdout, stderr)
		}
	}
	if !found {
		t.Fatalf("verify stopped before the second connector:\n%s\n%s", stdout, stderr)
	}
	_, raw, _ = strings.Cut(stdout, "connector b-raw")
	for _, want := range []string{
		"holding 30 sequences in scope",
		"3 raw objects checked from their metadata only",
		"OK: every sequence in scope",
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("verify output for b-raw lacks %q:\n%s", want, raw)
		}
	}
	if strings.Contains(stdout, "PROBLEM") || strings.Contains(stdout, "can not read the records") {
		t.Errorf("verify reported a problem with raw objects:\n%s", stdout)
	}
}

func TestVerifyClampsToSeqToTheStream(t *testing.T) {
	dir, creds := verifyEnv(t, "vclamp")
	code, stdout, stderr := jetlakeEnv(t, creds, "verify", "-quiet", "-to-seq", "5000", "-config", filepath.Join(dir, "b-raw.toml"))
	if code != exitOK {
		t.Fatalf("verify -to-seq 5000: exit %d, want 0 (sequences past the stream's end are not missing)\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"sequences 1-30", "-to-seq 5000 is past the stream's last sequence: checking up to 30"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("verify output lacks %q:\n%s", want, stdout)
		}
	}
}
