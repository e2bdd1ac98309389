package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/plan"
)

// cmdPlan is a dry run: it prints what jetlake run would do with the
// configuration and checks, online, everything it needs. It changes nothing
// but a probe object under <prefix>/_jetlake/probe/ (removed with -cleanup).
func cmdPlan(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "connector file or directory of *.toml files")
	cleanup := fs.Bool("cleanup", false, "remove the probe object afterwards (needs s3:DeleteObject)")
	timeout := fs.Duration("timeout", 10*time.Second, "time limit of each network call")
	showPayloads := fs.Bool("show-payloads", false, "print the value a sample message was rejected for (may be personal data; off: the column and what is wrong only)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jetlake plan: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "jetlake plan: -timeout %s: must be more than 0\n", *timeout)
		return exitUsage
	}
	conns, code, ok := loadConfig(*path, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var failed, warned int
	for i, c := range conns {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		res := plan.Run(ctx, c, plan.Options{Cleanup: *cleanup, Timeout: *timeout, Now: time.Now().UTC(), ShowPayloads: *showPayloads})
		printPlan(stdout, c, res, *cleanup)
		failed += res.Count(plan.Fail)
		warned += res.Count(plan.Warn)
	}
	fmt.Fprintf(stdout, "\nplan: %d %s failed, %d %s\n", failed, plural(failed, "check", "checks"), warned, plural(warned, "warning", "warnings"))
	if failed > 0 {
		return exitFailure
	}
	return exitOK
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// printPlan writes the plan of connector c.
func printPlan(w io.Writer, c *config.Connector, res *plan.Result, cleanup bool) {
	fmt.Fprintf(w, "connector %s (%s)\n\n", c.Name, c.File)
	fmt.Fprintln(w, "effective configuration (defaults filled in; secrets are never in the file, only the names of their variables and files):")
	for _, l := range strings.Split(strings.TrimRight(effectiveConfig(c), "\n"), "\n") {
		if l == "" {
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintln(w, "  "+l)
	}
	fmt.Fprintln(w)
	what := "object keys"
	if c.Iceberg != nil {
		what = "data file keys of the Iceberg table"
	}
	fmt.Fprintf(w, "sample %s (messages of this hour; sequences are examples):\n", what)
	for _, l := range res.Samples {
		fmt.Fprintln(w, "  "+l)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "checks:")
	for _, l := range res.Checks {
		fmt.Fprintf(w, "  %-4s  %s\n", l.Status, l.Msg)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "least-privilege S3 policy for the identity jetlake runs as (as a bucket policy, add a \"Principal\" to each statement):")
	for _, l := range strings.Split(s3Policy(c, cleanup), "\n") {
		fmt.Fprintln(w, "  "+l)
	}
	if c.S3.SSE == config.SSEKMS {
		fmt.Fprintln(w, "  with sse = \"kms\", the identity also needs kms:GenerateDataKey and kms:Decrypt on the KMS key")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "NATS permissions of the user jetlake connects as (nats-server authorization):")
	for _, l := range strings.Split(natsPermissions(c), "\n") {
		fmt.Fprintln(w, "  "+l)
	}
}

// effectiveConfig renders the resolved connector as TOML, every default
// filled in: its settings as config lists them, in the order of the
// configuration reference. Secrets are never in a connector: environment
// variables and files are shown by name, with whether they are there.
func effectiveConfig(c *config.Connector) string {
	var b strings.Builder
	for _, t := range c.Settings() {
		if t.Header != "" {
			b.WriteString("\n" + t.Header + "\n")
		}
		for _, s := range t.Settings {
			writeSetting(&b, s)
		}
	}
	return b.String()
}

// writeSetting writes the line of setting s: key = value, with its note
// and whether what it names is there in a comment; or, for a key without
// a value, its note as a comment line.
func writeSetting(b *strings.Builder, s config.Setting) {
	if s.Value == "" {
		fmt.Fprintf(b, "# %s\n", s.Note)
		if s.Key == "access_key_id_env" {
			credentialChain(b)
		}
		return
	}
	var comments []string
	if s.Note != "" {
		comments = append(comments, s.Note)
	}
	switch {
	case s.Env != "":
		comments = append(comments, plan.EnvStatus(s.Env))
	case s.File != "":
		comments = append(comments, plan.FileStatus(s.File))
	}
	line := s.Key + " = " + s.Value
	if len(comments) > 0 {
		line += "  # " + strings.Join(comments, "; ")
	}
	b.WriteString(line + "\n")
}

// credentialChain writes, as comments, where the store's credentials are
// looked for when [s3] names no variables, and whether each is there.
func credentialChain(b *strings.Builder) {
	fmt.Fprintf(b, "#   AWS_ACCESS_KEY_ID (%s), AWS_SECRET_ACCESS_KEY (%s), AWS_SESSION_TOKEN (%s)\n",
		plan.EnvStatus("AWS_ACCESS_KEY_ID"), plan.EnvStatus("AWS_SECRET_ACCESS_KEY"), plan.EnvStatus("AWS_SESSION_TOKEN"))
	fmt.Fprintf(b, "#   MINIO_ROOT_USER (%s), MINIO_ROOT_PASSWORD (%s)\n", plan.EnvStatus("MINIO_ROOT_USER"), plan.EnvStatus("MINIO_ROOT_PASSWORD"))
	file := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if file == "" {
		if home, err := os.UserHomeDir(); err == nil {
			file = filepath.Join(home, ".aws", "credentials")
		}
	}
	profile := os.Getenv("AWS_PROFILE")
	if profile == "" {
		profile = "default"
	}
	fmt.Fprintf(b, "#   shared credentials file %s (%s), profile %s\n", file, plan.FileStatus(file), profile)
	b.WriteString("#   IAM: instance, task or pod role\n")
}
