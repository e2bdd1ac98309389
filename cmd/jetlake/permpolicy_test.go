package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// printedS3Policy runs plan (with -cleanup when cleanup) and returns the
// S3 policy it prints.
func printedS3Policy(t *testing.T, env []string, file string, cleanup bool) string {
	t.Helper()
	args := []string{"plan", "-config", file}
	if cleanup {
		args = append(args, "-cleanup")
	}
	_, out, errOut := jetlakeEnv(t, env, args...)
	_, rest, ok := strings.Cut(out, "least-privilege S3 policy")
	if !ok {
		t.Fatalf("plan printed no S3 policy:\n%s%s", out, errOut)
	}
	var lines []string
	for _, l := range strings.Split(rest, "\n")[1:] {
		if l == "" {
			break
		}
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	return strings.Join(lines, "\n")
}

// A MinIO user with exactly the policy plan prints can run plan (with
// -cleanup when the policy was printed for it), run and verify -deep; for
// an Iceberg connector, its commits expire snapshots and remove old
// metadata without a refusal. Without the cleanup grant, plan -cleanup
// names the grant to add.
func TestThePrintedS3PolicyServesAMinIOUser(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, extra string
		cleanup     bool
	}{
		{"plain", "", false},
		{"iceberg", "[output]\nformat = \"parquet\"\n[iceberg]\nuri = \"sqlite://%s\"\nnamespace = \"lake\"\ntable = \"events\"\n" +
			"commit_interval = \"1s\"\nkeep_snapshots = 1\nsnapshot_retention = \"0s\"\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "s3policy" + tt.name
			c := newCrashEnv(t, name, shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
			if tt.extra != "" {
				c.appendFile(strings.Replace(tt.extra, "%s", t.TempDir()+"/catalog.db", 1))
			}
			policy := printedS3Policy(t, c.minio.ClientEnv(), c.file, tt.cleanup)
			t.Logf("policy:\n%s", policy)
			if err := c.minio.AddUser(context.Background(), name, name+"-secret", name, policy); err != nil {
				t.Fatalf("MinIO refuses the printed policy: %v", err)
			}
			env := c.minio.UserEnv(name, name+"-secret")
			planArgs := []string{"plan", "-config", c.file}
			if tt.cleanup {
				planArgs = append(planArgs, "-cleanup")
			}
			if code, out, errOut := jetlakeEnv(t, env, planArgs...); code != 0 {
				t.Fatalf("%v as the user: exit %d:\n%s%s", planArgs, code, out, errOut)
			}
			if !tt.cleanup {
				code, out, _ := jetlakeEnv(t, env, "plan", "-cleanup", "-config", c.file)
				want := "-cleanup needs s3:DeleteObject on arn:aws:s3:::" + name + "/lake/_jetlake/probe/*"
				_, failed, _ := strings.Cut(out, "probe: cannot remove")
				failed, _, _ = strings.Cut(failed, "\n")
				if code != 1 || !strings.Contains(failed, want) || strings.Contains(failed, "s3:PutObject") {
					t.Fatalf("plan -cleanup without the grant: exit %d, want 1 and %q:\n%s", code, want, out)
				}
			}
			log := c.runAs(env, tt.extra != "")
			for _, bad := range []string{"could not expire", "Forbidden", "Access Denied", "AccessDenied"} {
				if strings.Contains(log, bad) {
					t.Fatalf("run as the user logged %q:\n%s", bad, log)
				}
			}
			cmd := exec.Command(binary, "verify", "-deep", "-quiet", "-config", c.file)
			cmd.Env = env
			if out, err := runWithTimeout(cmd, 2*time.Minute); err != nil {
				t.Fatalf("verify -deep as the user: %v\n%s", err, out)
			}
		})
	}
}

// appendFile appends body to the connector file.
func (c *crashEnv) appendFile(body string) {
	c.t.Helper()
	cmd := exec.Command("sh", "-c", `cat >> "$0"`, c.file)
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("append to %s: %v %s", c.file, err, out)
	}
}

// runAs runs jetlake with env while 1,500 messages arrive in three
// batches, so that an Iceberg connector commits several times; with
// expiry it waits for the log of an expiry, or of its failure. It stops
// jetlake with SIGTERM and returns its log.
func (c *crashEnv) runAs(env []string, expiry bool) string {
	c.t.Helper()
	cmd := exec.Command(binary, "run", "-config", c.file)
	cmd.Env = env
	var log bytes.Buffer
	lw := &lockedWriter{w: &log}
	cmd.Stdout, cmd.Stderr = lw, lw
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cmd.Process.Kill() })
	logged := func() string {
		lw.mu.Lock()
		defer lw.mu.Unlock()
		return log.String()
	}
	for range 3 {
		c.publish(500, 3)
		time.Sleep(3 * time.Second)
	}
	for deadline := time.Now().Add(time.Minute); expiry && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if s := logged(); strings.Contains(s, "snapshots expired") || strings.Contains(s, "could not expire") {
			break
		}
	}
	if expiry && !strings.Contains(logged(), "snapshots expired") && !strings.Contains(logged(), "could not expire") {
		c.t.Fatalf("no expiry within a minute:\n%s", logged())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		c.t.Fatalf("run as the user: %v\n%s", err, logged())
	}
	return logged()
}
