package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
)

// binary is jetlake built with fault injection for the crash tests. The
// servers start when a test first needs them; none does under -short.
var (
	binary string
	shared exportertest.Shared
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "jetlake-cmd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "jetlake")
	if out, err := exec.Command("go", "build", "-tags", faultTag, "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build jetlake: %v\n%s", err, out)
		return 1
	}
	defer shared.Stop()
	return m.Run()
}

// jetlake runs the built binary and returns its exit code and output.
func jetlake(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return jetlakeEnv(t, nil, args...)
}

// jetlakeEnv is jetlake with the environment env, nil for this process's.
func jetlakeEnv(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return code, o.String(), e.String()
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestVersionPrintsAVersion(t *testing.T) {
	code, out, _ := jetlake(t, "version")
	if code != 0 || !strings.HasPrefix(out, "jetlake ") {
		t.Fatalf("version: exit %d, %q", code, out)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"run"}, {"validate"}, {"run", "-config"}, {"run", "-config", "x", "-log-format", "xml"}} {
		if code, _, _ := jetlake(t, args...); code != 2 {
			t.Errorf("jetlake %q: exit %d, want 2", args, code)
		}
	}
}

func TestValidateReportsEveryProblemWithFileLineAndKey(t *testing.T) {
	path := writeFile(t, "bad.toml", `name = "bad"

[nats]
url = "nats://127.0.0.1:4222"

[[streams]]
stream = "EVENTS"
ack_wait = "2m"

[s3]
bucket = "lake"

[output]
format = "xml"

[rotation]
max_file_sizee = "8MiB"
max_file_age = "5m"
`)
	code, out, errOut := jetlake(t, "validate", "-config", path)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stdout %q stderr %q", code, out, errOut)
	}
	for _, want := range []string{
		path + ":14: output.format: ",
		path + ":17: rotation.max_file_sizee: unknown key",
		path + ":18: rotation.max_file_age: ",
	} {
		if !strings.Contains(errOut, "\n"+want) && !strings.HasPrefix(errOut, want) {
			t.Errorf("stderr lacks a line starting %q:\n%s", want, errOut)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if !strings.HasPrefix(l, path+":") {
			t.Errorf("line %q is not FILE:LINE: KEY: message", l)
		}
	}
	// run refuses the same file the same way.
	if code, _, errOut2 := jetlake(t, "run", "-config", path); code != 2 || errOut2 != errOut {
		t.Fatalf("run: exit %d, stderr %q; want 2 and the validate output", code, errOut2)
	}
}

func TestValidateSummarisesAGoodConnector(t *testing.T) {
	code, out, errOut := jetlake(t, "validate", "-config", "../../examples/local.toml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"connector events", "stream EVENTS", "events.>", "json_lines", "s3://lake/raw/EVENTS/events.example/"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestSIGTERMUploadsAndAcksPartialBuffers(t *testing.T) {
	ctx := context.Background()
	js := streamAndBucket(t, shared.NATS(t), shared.MinIO(t), "term", jetstream.StreamConfig{})
	for i := range 50 {
		if _, err := js.Publish(ctx, fmt.Sprintf("term.s%d", i%3), []byte(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	path := writeFile(t, "term.toml", fmt.Sprintf(`name = "term"
[nats]
url = %q
[[streams]]
stream = "TERM"
[s3]
bucket = "term"
endpoint = %q
[rotation]
max_messages_per_file = 10000
max_file_age = "1m"
`, shared.NATS(t).URL, shared.MinIO(t).Endpoint))
	cmd := exec.Command(binary, "run", "-config", path)
	cmd.Env = shared.MinIO(t).ClientEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	cons, err := js.Consumer(ctx, "TERM", "term")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the exporter did not receive the messages: %v\n%s", err, stderr.String())
		}
		if cons == nil {
			cons, err = js.Consumer(ctx, "TERM", "term")
			continue
		}
		// Held by the exporter: unacked, or, read ack-less, delivered.
		if info, err := cons.Info(ctx); err == nil && info.NumPending == 0 && info.Delivered.Stream == 50 && exportedFloor(t, js, info) == 0 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 0 || exportedFloor(t, js, info) != 50 {
		t.Fatalf("after SIGTERM: %d unacked, exported up to %d; want 0 and 50", info.NumAckPending, exportedFloor(t, js, info))
	}
	mc, _ := shared.MinIO(t).Client()
	objects := 0
	for obj := range mc.ListObjects(ctx, "term", minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		if strings.HasPrefix(obj.Key, "_jetlake/") {
			continue
		}
		objects++
	}
	if objects != 3 {
		t.Fatalf("%d objects, want one per subject (3)", objects)
	}
	if !strings.Contains(stderr.String(), "reason=shutdown") {
		t.Fatalf("no object was logged with reason=shutdown:\n%s", stderr.String())
	}
}

// validate shows what applies to the connector: for an Iceberg connector
// the table, its catalog (redacted) and a data file in its partition folder,
// not a path template it does not use; for a partitioned stream the
// partition consumers.
func TestValidateSummarisesIcebergAndPartitions(t *testing.T) {
	path := writeFile(t, "ice.toml", `name = "ice"
[nats]
url = "nats://127.0.0.1:4222"
[[streams]]
stream = "EV"
subjects = ["ev.*"]
partitions = 4
[s3]
bucket = "lake"
prefix = "tables"
[output]
format = "parquet"
[iceberg]
catalog = "sql"
uri = "postgres://jetlake@db.example.com/lake?sslmode=verify-full"
namespace = "analytics"
table = "events"
`)
	code, out, errOut := jetlake(t, "validate", "-config", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"partitions 4: consumers ",
		"iceberg table analytics.events, sql catalog postgres://REDACTED@db.example.com/lake",
		"partitioned by hour(timestamp), subject",
		"sample data file: s3://lake/tables/analytics/events/data/",
		"subject=ev.example/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"template", "sample object"} {
		if strings.Contains(out, not) {
			t.Errorf("an Iceberg summary shows %q, which does not apply:\n%s", not, out)
		}
	}
}
