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
// filled in. Secrets are never in a connector: environment variables and
// files are shown by name, with whether they are set.
func effectiveConfig(c *config.Connector) string {
	w := &effectiveWriter{}
	w.kv("name", c.Name, "")
	w.kv("enabled", c.Enabled, "")
	w.kv("shutdown_timeout", c.ShutdownTimeout, "")
	w.kv("ready_upload_failure", c.ReadyUploadFailure, "")
	w.nats(c.NATS)
	w.streams(c.Streams)
	w.s3(c.S3)
	w.state(c.State)
	w.output(c.Output, c.Iceberg != nil)
	if c.Iceberg != nil {
		w.iceberg(c.Iceberg)
	}
	w.rotation(c.Rotation)
	return w.b.String()
}

// effectiveWriter writes the effective configuration of a connector, one
// TOML table after another.
type effectiveWriter struct {
	b strings.Builder
}

// kv writes the line k = v, v in TOML, with comment after it unless that
// is "".
func (w *effectiveWriter) kv(k string, v any, comment string) {
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
	fmt.Fprintf(&w.b, "%s = %s\n", k, s)
}

// opt writes the line k = v unless v is "".
func (w *effectiveWriter) opt(k, v, comment string) {
	if v != "" {
		w.kv(k, v, comment)
	}
}

// table starts the table of header ("[nats]", "[[streams]]") after a
// blank line.
func (w *effectiveWriter) table(header string) {
	w.b.WriteString("\n" + header + "\n")
}

// nats writes [nats]: the servers, the credentials and TLS files with
// whether they are there, and the JetStream API.
func (w *effectiveWriter) nats(n config.NATS) {
	w.table("[nats]")
	w.kv("url", redactURLs(n.URL), "")
	w.opt("creds_file", n.CredsFile, plan.FileStatus(n.CredsFile))
	w.opt("nkey_seed_file", n.NkeySeedFile, plan.FileStatus(n.NkeySeedFile))
	w.opt("token_env", n.TokenEnv, plan.EnvStatus(n.TokenEnv))
	w.opt("user", n.User, "")
	w.opt("password_env", n.PasswordEnv, plan.EnvStatus(n.PasswordEnv))
	if n.CredsFile == "" && n.NkeySeedFile == "" && n.TokenEnv == "" && n.User == "" {
		w.b.WriteString("# no credentials: connects without authentication\n")
	}
	w.opt("tls_ca_file", n.TLSCAFile, plan.FileStatus(n.TLSCAFile))
	w.opt("tls_cert_file", n.TLSCertFile, plan.FileStatus(n.TLSCertFile))
	w.opt("tls_key_file", n.TLSKeyFile, plan.FileStatus(n.TLSKeyFile))
	w.kv("tls_required", n.TLSRequired, "")
	w.kv("allow_insecure_auth", n.AllowInsecureAuth, "")
	w.opt("jetstream_domain", n.JetStreamDomain, "")
	w.opt("jetstream_api_prefix", n.JetStreamAPIPrefix, "")
	inbox := n.InboxPrefix
	if inbox == "" {
		inbox = "_INBOX"
	}
	w.kv("inbox_prefix", inbox, "")
}

// streams writes a [[streams]] table for each stream, with the settings
// of partitions and failover where they apply.
func (w *effectiveWriter) streams(streams []config.Stream) {
	for _, s := range streams {
		w.table("[[streams]]")
		w.kv("stream", s.Stream, "")
		if len(s.Subjects) == 0 {
			w.kv("subjects", []string{}, "the whole stream")
		} else {
			w.kv("subjects", s.Subjects, "")
		}
		w.kv("consumer", s.Consumer, "")
		w.kv("deliver_policy", s.DeliverPolicy, "only where a consumer without an export record starts")
		if s.ConsumerStorage == "" {
			w.kv("consumer_storage", config.DefaultConsumerStorage, "for a consumer jetlake creates; an existing one keeps its own")
		} else {
			w.kv("consumer_storage", s.ConsumerStorage, "")
		}
		w.kv("ack_wait", s.AckWait, "")
		w.kv("max_ack_pending", s.MaxAckPending, "")
		if s.Partitions > 1 {
			w.kv("partitions", s.Partitions, "")
			w.kv("lease_ttl", s.LeaseTTL, "")
		}
		if s.Failover != "" {
			w.kv("failover", s.Failover, "")
			w.kv("priority_timeout", s.PriorityTimeout, "")
		}
	}
}

// s3 writes [s3]: the store, its credentials (or the chain that finds
// them) and how objects are written.
func (w *effectiveWriter) s3(s3 config.S3) {
	w.table("[s3]")
	w.kv("bucket", s3.Bucket, "")
	if s3.Endpoint != "" {
		w.kv("endpoint", redactURLs(s3.Endpoint), "")
	} else {
		w.b.WriteString("# endpoint: AWS S3\n")
	}
	w.kv("region", s3.Region, "")
	w.kv("prefix", s3.Prefix, "")
	w.kv("path_style", s3.PathStyle, "")
	if s3.AccessKeyIDEnv != "" {
		w.kv("access_key_id_env", s3.AccessKeyIDEnv, plan.EnvStatus(s3.AccessKeyIDEnv))
		w.kv("secret_access_key_env", s3.SecretAccessKeyEnv, plan.EnvStatus(s3.SecretAccessKeyEnv))
	} else {
		w.credentialChain()
	}
	w.kv("upload_concurrency", s3.UploadConcurrency, "")
	w.kv("checksum", s3.Checksum, "")
	w.kv("allow_insecure_http", s3.AllowInsecureHTTP, "")
	w.opt("tls_ca_file", s3.TLSCAFile, plan.FileStatus(s3.TLSCAFile))
	w.opt("sse", s3.SSE, "")
	w.opt("sse_kms_key_id", s3.SSEKMSKeyID, "")
	w.opt("storage_class", s3.StorageClass, "")
}

// credentialChain writes, as comments, where the store's credentials are
// looked for when [s3] names no variables, and whether each is there.
func (w *effectiveWriter) credentialChain() {
	w.b.WriteString("# credentials: the standard chain, first that works:\n")
	fmt.Fprintf(&w.b, "#   AWS_ACCESS_KEY_ID (%s), AWS_SECRET_ACCESS_KEY (%s), AWS_SESSION_TOKEN (%s)\n",
		plan.EnvStatus("AWS_ACCESS_KEY_ID"), plan.EnvStatus("AWS_SECRET_ACCESS_KEY"), plan.EnvStatus("AWS_SESSION_TOKEN"))
	fmt.Fprintf(&w.b, "#   MINIO_ROOT_USER (%s), MINIO_ROOT_PASSWORD (%s)\n", plan.EnvStatus("MINIO_ROOT_USER"), plan.EnvStatus("MINIO_ROOT_PASSWORD"))
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
	fmt.Fprintf(&w.b, "#   shared credentials file %s (%s), profile %s\n", file, plan.FileStatus(file), profile)
	w.b.WriteString("#   IAM: instance, task or pod role\n")
}

// state writes [state]: the bucket of intents.
func (w *effectiveWriter) state(st config.State) {
	w.table("[state]")
	w.kv("bucket", st.Bucket, "")
	w.kv("replicas", max(st.Replicas, 1), "")
}

// output writes [output] and its [[output.columns]], with the keys of the
// format only; an Iceberg table has no path_template or group_by.
func (w *effectiveWriter) output(o config.Output, iceberg bool) {
	w.table("[output]")
	w.kv("format", string(o.Format), "")
	w.kv("compression", string(o.Compression), "objects end in ."+o.Ext())
	if !iceberg {
		w.kv("path_template", o.PathTemplate.String(), "")
		w.kv("group_by", o.GroupBy, "")
	}
	if o.UsesContent() || iceberg {
		// Capped only where the messages choose their directories.
		w.kv("max_open_directories", o.MaxOpenDirectories, "")
	}
	w.kv("include_metadata", o.IncludeMetadata, "")
	w.kv("include_headers", o.IncludeHeaders, "")
	if o.Format == formats.JSONLines || o.Format == formats.JSONArray {
		w.kv("keep_exact_payload", o.KeepExactPayload, "")
	}
	if o.Format == formats.Raw {
		w.kv("raw_delimiter", o.RawDelimiter, "")
	}
	if !iceberg {
		w.kv("time_source", o.Time.Source(), "")
		if !o.Time.Ingest() {
			w.kv("time_fallback", o.Time.Fallback(), "")
		}
		w.opt("time_unit", o.Time.Unit, "")
		w.kv("timezone", o.Time.Zone(), "")
	}
	if o.Format == formats.Parquet {
		w.kv("row_group_size", config.FormatSize(o.RowGroupSize), "")
		w.kv("keep_payload", o.KeepPayload, "")
	}
	if o.Format == formats.Parquet || len(o.Columns) > 0 {
		w.kv("on_type_error", string(o.OnTypeError), "")
	}
	for _, col := range o.Columns {
		w.table("[[output.columns]]")
		w.kv("name", col.Name, "")
		w.kv("source", col.Source, "")
		w.kv("type", string(col.Type), "")
		w.opt("unit", col.Unit, "")
		w.kv("coerce", col.Coerce, "")
	}
}

// iceberg writes [iceberg]: the catalog and how it is reached, the table,
// its partitioning and its upkeep.
func (w *effectiveWriter) iceberg(ib *config.Iceberg) {
	w.table("[iceberg]")
	w.kv("catalog", ib.Catalog, "")
	if ib.URI != "" {
		w.kv("uri", config.RedactURL(ib.URI), "")
	}
	if strings.HasPrefix(ib.URI, "postgres") {
		w.kv("allow_insecure_sslmode", ib.AllowInsecureSSLMode, "")
	}
	w.opt("warehouse", ib.Warehouse, "")
	w.opt("token_env", ib.TokenEnv, plan.EnvStatus(ib.TokenEnv))
	w.opt("credential_env", ib.CredentialEnv, plan.EnvStatus(ib.CredentialEnv))
	w.opt("sigv4_service", ib.SigV4Service, "")
	if ib.Catalog == "glue" || ib.SigV4Service != "" {
		w.kv("region", ib.Region, "")
		w.opt("catalog_id", ib.CatalogID, "")
	}
	w.kv("namespace", ib.Namespace, "")
	w.kv("table", ib.Table, "")
	parts := make([]string, len(ib.Partitioning))
	for i, p := range ib.Partitioning {
		parts[i] = p.String()
	}
	w.kv("partitioning", parts, "")
	w.kv("commit_interval", ib.CommitInterval, "")
	w.kv("keep_snapshots", ib.KeepSnapshots, "")
	w.kv("snapshot_retention", ib.SnapshotRetention, "")
	w.kv("compact_after", ib.CompactAfter, "")
	w.kv("remove_orphans", ib.RemoveOrphans, "")
	w.kv("orphan_age", ib.OrphanAge, "")
}

// rotation writes [rotation]: when a file is closed, and the memory the
// buffers may hold.
func (w *effectiveWriter) rotation(r config.Rotation) {
	w.table("[rotation]")
	w.kv("max_file_size", config.FormatSize(r.MaxFileSize), "")
	w.kv("max_messages_per_file", r.MaxMessagesPerFile, "")
	w.kv("max_file_age", r.MaxFileAge, "")
	w.kv("max_buffered_bytes", config.FormatSize(r.MaxBufferedBytes), "")
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
