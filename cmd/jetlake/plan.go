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
	"github.com/jetlake/jetlake/formats"
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
		res := plan.Run(ctx, c, plan.Options{Cleanup: *cleanup, Timeout: *timeout, Now: time.Now().UTC()})
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
// filled in. Secrets are never in a connector: environment variables and
// files are shown by name, with whether they are set.
func effectiveConfig(c *config.Connector) string {
	var b strings.Builder
	kv := func(k string, v any, comment string) {
		var s string
		switch v := v.(type) {
		case string:
			s = tomlString(v)
		case time.Duration:
			s = tomlString(config.FormatDuration(v))
		case []string:
			q := make([]string, len(v))
			for i, e := range v {
				q[i] = tomlString(e)
			}
			s = "[" + strings.Join(q, ", ") + "]"
		default:
			s = fmt.Sprint(v)
		}
		if comment != "" {
			s += "  # " + comment
		}
		fmt.Fprintf(&b, "%s = %s\n", k, s)
	}
	opt := func(k, v, comment string) {
		if v != "" {
			kv(k, v, comment)
		}
	}
	kv("name", c.Name, "")
	kv("enabled", c.Enabled, "")
	kv("shutdown_timeout", c.ShutdownTimeout, "")
	kv("ready_upload_failure", c.ReadyUploadFailure, "")

	n := c.NATS
	b.WriteString("\n[nats]\n")
	kv("url", redactURLs(n.URL), "")
	opt("creds_file", n.CredsFile, plan.FileStatus(n.CredsFile))
	opt("nkey_seed_file", n.NkeySeedFile, plan.FileStatus(n.NkeySeedFile))
	opt("token_env", n.TokenEnv, plan.EnvStatus(n.TokenEnv))
	opt("user", n.User, "")
	opt("password_env", n.PasswordEnv, plan.EnvStatus(n.PasswordEnv))
	if n.CredsFile == "" && n.NkeySeedFile == "" && n.TokenEnv == "" && n.User == "" {
		b.WriteString("# no credentials: connects without authentication\n")
	}
	opt("tls_ca_file", n.TLSCAFile, plan.FileStatus(n.TLSCAFile))
	opt("tls_cert_file", n.TLSCertFile, plan.FileStatus(n.TLSCertFile))
	opt("tls_key_file", n.TLSKeyFile, plan.FileStatus(n.TLSKeyFile))
	kv("tls_required", n.TLSRequired, "")
	kv("allow_insecure_auth", n.AllowInsecureAuth, "")
	opt("jetstream_domain", n.JetStreamDomain, "")
	opt("jetstream_api_prefix", n.JetStreamAPIPrefix, "")
	inbox := n.InboxPrefix
	if inbox == "" {
		inbox = "_INBOX"
	}
	kv("inbox_prefix", inbox, "")

	for _, s := range c.Streams {
		b.WriteString("\n[[streams]]\n")
		kv("stream", s.Stream, "")
		if len(s.Subjects) == 0 {
			kv("subjects", []string{}, "the whole stream")
		} else {
			kv("subjects", s.Subjects, "")
		}
		kv("consumer", s.Consumer, "")
		kv("deliver_policy", s.DeliverPolicy, "only where a consumer without an export record starts")
		if s.ConsumerStorage == "" {
			kv("consumer_storage", config.DefaultConsumerStorage, "for a consumer jetlake creates; an existing one keeps its own")
		} else {
			kv("consumer_storage", s.ConsumerStorage, "")
		}
		kv("ack_wait", s.AckWait, "")
		kv("max_ack_pending", s.MaxAckPending, "")
		if s.Partitions > 1 {
			kv("partitions", s.Partitions, "")
			kv("lease_ttl", s.LeaseTTL, "")
		}
		if s.Failover != "" {
			kv("failover", s.Failover, "")
			kv("priority_timeout", s.PriorityTimeout, "")
		}
	}

	s3 := c.S3
	b.WriteString("\n[s3]\n")
	kv("bucket", s3.Bucket, "")
	if s3.Endpoint != "" {
		kv("endpoint", redactURLs(s3.Endpoint), "")
	} else {
		b.WriteString("# endpoint: AWS S3\n")
	}
	kv("region", s3.Region, "")
	kv("prefix", s3.Prefix, "")
	kv("path_style", s3.PathStyle, "")
	if s3.AccessKeyIDEnv != "" {
		kv("access_key_id_env", s3.AccessKeyIDEnv, plan.EnvStatus(s3.AccessKeyIDEnv))
		kv("secret_access_key_env", s3.SecretAccessKeyEnv, plan.EnvStatus(s3.SecretAccessKeyEnv))
	} else {
		b.WriteString("# credentials: the standard chain, first that works:\n")
		fmt.Fprintf(&b, "#   AWS_ACCESS_KEY_ID (%s), AWS_SECRET_ACCESS_KEY (%s), AWS_SESSION_TOKEN (%s)\n",
			plan.EnvStatus("AWS_ACCESS_KEY_ID"), plan.EnvStatus("AWS_SECRET_ACCESS_KEY"), plan.EnvStatus("AWS_SESSION_TOKEN"))
		fmt.Fprintf(&b, "#   MINIO_ROOT_USER (%s), MINIO_ROOT_PASSWORD (%s)\n", plan.EnvStatus("MINIO_ROOT_USER"), plan.EnvStatus("MINIO_ROOT_PASSWORD"))
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
		fmt.Fprintf(&b, "#   shared credentials file %s (%s), profile %s\n", file, plan.FileStatus(file), profile)
		b.WriteString("#   IAM: instance, task or pod role\n")
	}
	kv("upload_concurrency", s3.UploadConcurrency, "")
	kv("checksum", s3.Checksum, "")
	kv("allow_insecure_http", s3.AllowInsecureHTTP, "")
	opt("tls_ca_file", s3.TLSCAFile, plan.FileStatus(s3.TLSCAFile))
	opt("sse", s3.SSE, "")
	opt("sse_kms_key_id", s3.SSEKMSKeyID, "")
	opt("storage_class", s3.StorageClass, "")

	b.WriteString("\n[state]\n")
	kv("bucket", c.State.Bucket, "")
	kv("replicas", max(c.State.Replicas, 1), "")

	o := c.Output
	b.WriteString("\n[output]\n")
	kv("format", string(o.Format), "")
	kv("compression", string(o.Compression), "objects end in ."+c.Output.Ext())
	if c.Iceberg == nil {
		kv("path_template", o.PathTemplate.String(), "")
		kv("group_by", o.GroupBy, "")
	}
	kv("include_metadata", o.IncludeMetadata, "")
	kv("include_headers", o.IncludeHeaders, "")
	if o.Format == formats.Raw {
		kv("raw_delimiter", o.RawDelimiter, "")
	}
	if o.Format == formats.Parquet {
		kv("row_group_size", config.FormatSize(o.RowGroupSize), "")
		kv("keep_payload", o.KeepPayload, "")
		kv("on_type_error", string(o.OnTypeError), "")
		for _, col := range o.Columns {
			b.WriteString("\n[[output.columns]]\n")
			kv("name", col.Name, "")
			kv("source", col.Source, "")
			kv("type", string(col.Type), "")
			opt("unit", col.Unit, "")
			kv("coerce", col.Coerce, "")
		}
	}

	if ib := c.Iceberg; ib != nil {
		b.WriteString("\n[iceberg]\n")
		kv("catalog", ib.Catalog, "")
		if ib.URI != "" {
			kv("uri", config.RedactURL(ib.URI), "")
		}
		if strings.HasPrefix(ib.URI, "postgres") {
			kv("allow_insecure_sslmode", ib.AllowInsecureSSLMode, "")
		}
		opt("warehouse", ib.Warehouse, "")
		opt("token_env", ib.TokenEnv, plan.EnvStatus(ib.TokenEnv))
		opt("credential_env", ib.CredentialEnv, plan.EnvStatus(ib.CredentialEnv))
		opt("sigv4_service", ib.SigV4Service, "")
		if ib.Catalog == "glue" || ib.SigV4Service != "" {
			kv("region", ib.Region, "")
			opt("catalog_id", ib.CatalogID, "")
		}
		kv("namespace", ib.Namespace, "")
		kv("table", ib.Table, "")
		parts := make([]string, len(ib.Partitioning))
		for i, p := range ib.Partitioning {
			parts[i] = p.String()
		}
		kv("partitioning", parts, "")
		kv("commit_interval", ib.CommitInterval, "")
		kv("keep_snapshots", ib.KeepSnapshots, "")
		kv("snapshot_retention", ib.SnapshotRetention, "")
		kv("compact_after", ib.CompactAfter, "")
		kv("remove_orphans", ib.RemoveOrphans, "")
		kv("orphan_age", ib.OrphanAge, "")
	}

	r := c.Rotation
	b.WriteString("\n[rotation]\n")
	kv("max_file_size", config.FormatSize(r.MaxFileSize), "")
	kv("max_messages_per_file", r.MaxMessagesPerFile, "")
	kv("max_file_age", r.MaxFileAge, "")
	kv("max_buffered_bytes", config.FormatSize(r.MaxBufferedBytes), "")
	return b.String()
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// redactURLs hides user information in a comma-separated list of URLs. The
// configuration rejects URLs with credentials; this is the second guard.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		parts[i] = config.RedactURL(p)
	}
	return strings.Join(parts, ",")
}
