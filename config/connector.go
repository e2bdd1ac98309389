package config

import (
	"errors"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// DefaultStateBucket is the JetStream key-value bucket holding the intents
// of uploads in flight when [state] names none.
const DefaultStateBucket = "jetlake_state"

// Defaults and limits of connector settings.
const (
	defaultShutdownTimeout    = 30 * time.Second
	defaultReadyUploadFailure = time.Minute
	defaultPriorityTimeout    = 30 * time.Second
	defaultRegion             = "us-east-1"
	defaultUploadConcurrency  = 4
	defaultPathTemplate       = "{stream}/{subject}/{date}/{hour}"
	defaultAckWait            = 2 * time.Minute
	defaultMaxFileSize        = 8 * mib
	defaultMaxMessagesPerFile = 10000
	defaultMaxFileAge         = time.Minute
	defaultMaxBufferedBytes   = 256 * mib
	defaultRowGroupSize       = 64 * mib

	minAckWait            = 10 * time.Second
	maxUploadConcurrency  = 64
	minFileSize           = kib
	maxFileSize           = 5 * gib // the largest object a single S3 PutObject stores
	minRowGroupSize       = mib
	maxRowGroupSize       = gib
	maxMessagesPerFile    = 10_000_000
	minDerivedAckPending  = 1000
	maxDerivedAckPending  = 1_000_000
	derivedAckPendingUnit = 256 // bytes of max_buffered_bytes per pending message
)

// maxObjectName is the longest object name after the directory:
// "/<first:020>-<last:020>." and an extension, which is at most
// maxExtLen bytes for every format and compression.
const (
	maxExtLen     = 16
	maxObjectName = 1 + 20 + 1 + 20 + 1 + maxExtLen
)

// parse parses and checks one file. It returns the connector, filled in as
// far as the file allowed even when there are problems, and the line of its
// name.
func parse(file string, src []byte) (*Connector, int, Errors) {
	var raw map[string]any
	if _, err := toml.Decode(string(src), &raw); err != nil {
		return nil, 0, Errors{syntaxProblem(file, err)}
	}
	c := &checker{file: file, lines: locate(string(src))}
	conn := c.connector(raw)
	sortProblems(c.probs)
	return conn, c.lines.line(keyPath{}.key("name")), c.probs
}

func (c *checker) connector(top map[string]any) *Connector {
	var root keyPath
	c.unknown(top, root, &topSpec)
	conn := &Connector{File: c.file}

	if !has(top, "name") {
		c.report(root.key("name"), "missing; every connector needs a name of letters, digits, '_' and '-', such as \"events\"")
	} else if name, ok := c.str(top, root, "name", ""); ok {
		if why := checkConnectorName(name); why != "" {
			c.report(root.key("name"), "%q %s", name, why)
		} else {
			conn.Name = name
		}
	}
	conn.Enabled, _ = c.boolean(top, root, "enabled", true)
	if d, ok := c.duration(top, root, "shutdown_timeout", defaultShutdownTimeout); ok && d <= 0 {
		c.report(root.key("shutdown_timeout"), "must be more than 0, such as \"30s\"")
	} else {
		conn.ShutdownTimeout = d
	}

	if d, ok := c.duration(top, root, "ready_upload_failure", defaultReadyUploadFailure); ok && d <= 0 {
		c.report(root.key("ready_upload_failure"), "must be more than 0, such as \"1m\"")
	} else {
		conn.ReadyUploadFailure = d
	}
	if t, p, ok := c.table(top, root, &natsSpec); ok {
		conn.NATS = c.nats(t, p)
	}
	if t, p, ok := c.table(top, root, &stateSpec); ok {
		conn.State = c.state(t, p)
	}
	s3ok := false
	if t, p, ok := c.table(top, root, &s3Spec); ok {
		conn.S3, s3ok = c.s3(t, p)
	}
	out := outputCheck{}
	if t, p, ok := c.table(top, root, &outputSpec); ok {
		out = c.output(t, p)
		conn.Output = out.Output
	}
	rot := rotationCheck{}
	if t, p, ok := c.table(top, root, &rotationSpec); ok {
		rot = c.rotation(t, p)
		conn.Rotation = rot.Rotation
	}
	conn.Streams = c.streams(top, conn.Name, rot)

	c.checkTemplate(conn, out, s3ok)
	return conn
}

func (c *checker) nats(t map[string]any, p keyPath) NATS {
	c.unknown(t, p, &natsSpec)
	var n NATS
	const urlHelp = "give one or more server URLs separated by commas, such as \"nats://127.0.0.1:4222\""
	if !has(t, "url") {
		c.report(p.key("url"), "missing; %s", urlHelp)
	} else if u, ok := c.str(t, p, "url", ""); ok {
		switch why := checkNATSURLs(u); {
		case strings.TrimSpace(u) == "":
			c.report(p.key("url"), "is empty; %s", urlHelp)
		case why != "":
			c.report(p.key("url"), "%s", why)
		default:
			n.URL = u
		}
	}

	n.CredsFile, _ = c.str(t, p, "creds_file", "")
	n.NkeySeedFile, _ = c.str(t, p, "nkey_seed_file", "")
	n.User, _ = c.str(t, p, "user", "")
	n.TLSCAFile, _ = c.str(t, p, "tls_ca_file", "")
	n.TLSCertFile, _ = c.str(t, p, "tls_cert_file", "")
	n.TLSKeyFile, _ = c.str(t, p, "tls_key_file", "")
	n.TLSRequired, _ = c.boolean(t, p, "tls_required", false)
	if d, ok := c.str(t, p, "jetstream_domain", ""); ok && d != "" {
		if why := checkToken(d); why != "" {
			c.report(p.key("jetstream_domain"), "%q %s", d, why)
		}
		n.JetStreamDomain = d
	}
	if a, ok := c.str(t, p, "jetstream_api_prefix", ""); ok && a != "" {
		if why := checkSubject(a); why != "" || strings.ContainsAny(a, "*>") {
			c.report(p.key("jetstream_api_prefix"), "%q is not a subject prefix without wildcards, such as \"$JS.hub.API\"", a)
		}
		n.JetStreamAPIPrefix = a
	}
	if n.JetStreamDomain != "" && n.JetStreamAPIPrefix != "" {
		c.report(p.key("jetstream_api_prefix"), "set either jetstream_domain or jetstream_api_prefix, not both")
	}
	if ib, ok := c.str(t, p, "inbox_prefix", ""); ok && ib != "" {
		if why := checkSubject(ib); why != "" || strings.ContainsAny(ib, "*>") {
			c.report(p.key("inbox_prefix"), "%q is not a subject prefix without wildcards, such as \"_INBOX_jetlake\"", ib)
		}
		n.InboxPrefix = ib
	}
	n.TokenEnv = c.envName(t, p, "token_env")
	n.PasswordEnv = c.envName(t, p, "password_env")

	// One way to authenticate; TLS client certificates combine with any.
	auth := []struct{ key, value string }{
		{"creds_file", n.CredsFile},
		{"nkey_seed_file", n.NkeySeedFile},
		{"token_env", n.TokenEnv},
		{"user", n.User},
	}
	first := ""
	for _, a := range auth {
		if a.value == "" {
			continue
		}
		if first != "" {
			c.report(p.key(a.key), "can not be combined with %s; set at most one of creds_file, nkey_seed_file, token_env and user", first)
			continue
		}
		first = a.key
	}
	switch {
	case n.User != "" && n.PasswordEnv == "":
		c.report(p.key("user"), "needs password_env, the name of the environment variable that holds the password")
	case n.User == "" && n.PasswordEnv != "":
		c.report(p.key("password_env"), "needs user, the name to log in with")
	}
	n.AllowInsecureAuth, _ = c.boolean(t, p, "allow_insecure_auth", false)
	if (n.TokenEnv != "" || n.PasswordEnv != "") && !n.AllowInsecureAuth && !n.TLSRequired && n.TLSCAFile == "" && n.TLSCertFile == "" {
		if u := plainRemoteURL(n.URL); u != "" {
			secret := "password"
			if n.TokenEnv != "" {
				secret = "token"
			}
			c.report(p.key("url"), "%q is plain text to a host that is not a loopback address: the %s would cross the network unencrypted; use tls:// or wss://, set tls_required = true or tls_ca_file, or set allow_insecure_auth = true", u, secret)
		}
	}
	switch {
	case n.TLSCertFile != "" && n.TLSKeyFile == "":
		c.report(p.key("tls_cert_file"), "needs tls_key_file: a client certificate goes with its private key")
	case n.TLSCertFile == "" && n.TLSKeyFile != "":
		c.report(p.key("tls_key_file"), "needs tls_cert_file: a private key goes with its client certificate")
	}
	return n
}

// envName returns the environment variable name at key, "" when it is
// absent, empty or invalid.
func (c *checker) envName(t map[string]any, p keyPath, key string) string {
	s, ok := c.str(t, p, key, "")
	if !ok || s == "" {
		return ""
	}
	if looksLikeAccessKeyID(s) {
		c.report(p.key(key), "looks like an access key id, not the name of an environment variable; %sname the variable that holds it", neverSecrets)
		return ""
	}
	if why := checkEnvName(s); why != "" {
		// The value is not repeated: it may be the secret itself, pasted
		// where the name of its variable belongs.
		c.report(p.key(key), "%s (the value is not shown, in case it is a secret pasted in; secrets are never read from the file)", why)
		return ""
	}
	return s
}

func (c *checker) s3(t map[string]any, p keyPath) (S3, bool) {
	c.unknown(t, p, &s3Spec)
	nprobs := len(c.probs)
	s := S3{}

	if !has(t, "bucket") {
		c.report(p.key("bucket"), "missing; name the bucket objects are written to, such as \"lake\"")
	} else if b, ok := c.str(t, p, "bucket", ""); ok {
		if why := checkBucket(b); why != "" {
			c.report(p.key("bucket"), "%q is not a valid bucket name; %s", b, why)
		}
		s.Bucket = b
	}
	if e, ok := c.str(t, p, "endpoint", ""); ok && e != "" {
		if why := checkEndpoint(e); why != "" {
			c.report(p.key("endpoint"), "%q %s", RedactURL(e), why)
		}
		s.Endpoint = e
	}
	if r, ok := c.str(t, p, "region", defaultRegion); ok {
		if why := checkRegion(r); why != "" {
			c.report(p.key("region"), "%q %s", r, why)
		}
		s.Region = r
	}
	if pre, ok := c.str(t, p, "prefix", ""); ok {
		if why := checkPrefix(pre); why != "" {
			c.report(p.key("prefix"), "%q %s", pre, why)
		}
		s.Prefix = pre
	}
	s.PathStyle, _ = c.boolean(t, p, "path_style", s.Endpoint != "")

	s.AccessKeyIDEnv = c.envName(t, p, "access_key_id_env")
	s.SecretAccessKeyEnv = c.envName(t, p, "secret_access_key_env")
	idSet, secretSet := nonEmpty(t, "access_key_id_env"), nonEmpty(t, "secret_access_key_env")
	switch {
	case idSet && !secretSet:
		c.report(p.key("secret_access_key_env"), "missing; access_key_id_env is set, and the two go together")
	case !idSet && secretSet:
		c.report(p.key("access_key_id_env"), "missing; secret_access_key_env is set, and the two go together")
	}

	s.AllowInsecureHTTP, _ = c.boolean(t, p, "allow_insecure_http", false)
	if u, err := url.Parse(s.Endpoint); err == nil && u.Scheme == "http" && !s.AllowInsecureHTTP && !isLoopback(u.Hostname()) {
		c.report(p.key("endpoint"), "%q is plain HTTP to a host that is not a loopback address: credentials and data would cross the network unencrypted; use https://, or set allow_insecure_http = true", RedactURL(s.Endpoint))
	}
	s.TLSCAFile, _ = c.str(t, p, "tls_ca_file", "")
	if sse, ok := c.str(t, p, "sse", ""); ok {
		switch sse {
		case "", SSES3, SSEKMS:
			s.SSE = sse
		default:
			c.report(p.key("sse"), "%q is not a server-side encryption; allowed: \"s3\" (SSE-S3), \"kms\" (SSE-KMS, with sse_kms_key_id)", sse)
		}
	}
	s.SSEKMSKeyID, _ = c.str(t, p, "sse_kms_key_id", "")
	if s.SSEKMSKeyID != "" && s.SSE != SSEKMS {
		c.report(p.key("sse_kms_key_id"), "is set but sse is not \"kms\"; set sse = \"kms\" or leave sse_kms_key_id out")
	}
	if sc, ok := c.str(t, p, "storage_class", ""); ok && sc != "" {
		if why := checkToken(sc); why != "" {
			c.report(p.key("storage_class"), "%q %s; such as \"STANDARD_IA\"", sc, why)
		}
		s.StorageClass = sc
	}

	if n, ok := c.integer(t, p, "upload_concurrency", defaultUploadConcurrency); ok {
		if n < 1 || n > maxUploadConcurrency {
			c.report(p.key("upload_concurrency"), "%d is out of range; allowed: 1 to %d", n, maxUploadConcurrency)
		}
		s.UploadConcurrency = int(n)
	}
	return s, len(c.probs) == nprobs
}

// state checks [state]: where the exporter keeps its intents.
func (c *checker) state(t map[string]any, p keyPath) State {
	c.unknown(t, p, &stateSpec)
	st := State{Bucket: DefaultStateBucket, Replicas: 1}
	if b, ok := c.str(t, p, "bucket", DefaultStateBucket); ok {
		if why := checkToken(b); why != "" || b == "" {
			c.report(p.key("bucket"), "%q is not a key-value bucket name; allowed: letters, digits, '_' and '-', such as %q", b, DefaultStateBucket)
		}
		st.Bucket = b
	}
	if n, ok := c.integer(t, p, "replicas", 1); ok {
		if n < 1 || n > 5 {
			c.report(p.key("replicas"), "%d is out of range; allowed: 1 to 5 (3 on a JetStream cluster)", n)
		}
		st.Replicas = int(n)
	}
	return st
}

// checkToken checks a name made of letters, digits, '_' and '-'.
func checkToken(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "may hold only letters, digits, '_' and '-'"
		}
	}
	return ""
}

// isLoopback reports whether host names this machine: plain HTTP to it
// never crosses a network.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func nonEmpty(t map[string]any, key string) bool {
	s, ok := t[key].(string)
	return ok && s != ""
}

// outputCheck is Output with what later checks need to know.
type outputCheck struct {
	Output
	templateSet bool // path_template is in the file
}

func (c *checker) output(t map[string]any, p keyPath) outputCheck {
	c.unknown(t, p, &outputSpec)
	o := outputCheck{templateSet: has(t, "path_template")}

	formatOK := false
	if f, ok := c.str(t, p, "format", string(formats.JSONLines)); ok {
		switch f := formats.Format(f); f {
		case formats.JSONLines, formats.JSONArray, formats.Raw, formats.Parquet:
			o.Format, formatOK = f, true
		default:
			c.report(p.key("format"), "%q is not a format; allowed: json_lines, json_array, raw, parquet", f)
		}
	}
	parquet := o.Format == formats.Parquet

	if formatOK {
		allowed := []formats.Compression{formats.None, formats.Gzip, formats.Zstd}
		if parquet {
			allowed = []formats.Compression{formats.Snappy, formats.Zstd, formats.Gzip, formats.None}
		}
		// The first allowed is the format's default.
		if z, ok := c.str(t, p, "compression", string(allowed[0])); ok {
			if slices.Contains(allowed, formats.Compression(z)) {
				o.Compression = formats.Compression(z)
			} else {
				c.report(p.key("compression"), "%q is not a compression for %s; allowed: %s", z, o.Format, join(allowed))
			}
		}
	}

	if src, ok := c.str(t, p, "path_template", defaultPathTemplate); ok {
		tpl, err := pathtemplate.Parse(src)
		var se *pathtemplate.SyntaxError
		switch {
		case errors.As(err, &se):
			c.report(p.key("path_template"), "%q: at byte %d: %s", src, se.Offset, se.Msg)
		case err != nil:
			c.report(p.key("path_template"), "%q: %v", src, err)
		default:
			o.PathTemplate = tpl
		}
	}

	if g, ok := c.str(t, p, "group_by", GroupBySubject); ok {
		switch g {
		case GroupBySubject, GroupByPath:
			o.GroupBy = g
		default:
			c.report(p.key("group_by"), "%q is not a grouping; allowed: subject (one file per subject and directory), path (one file per directory)", g)
		}
	}
	o.IncludeMetadata, _ = c.boolean(t, p, "include_metadata", true)
	o.IncludeHeaders, _ = c.boolean(t, p, "include_headers", false)
	if d, ok := c.str(t, p, "raw_delimiter", ""); ok {
		if d != "" && formatOK && o.Format != formats.Raw {
			c.report(p.key("raw_delimiter"), "is only for the raw format, and format is %s; remove raw_delimiter or set format = \"raw\"", o.Format)
		}
		o.RawDelimiter = d
	}

	// The parquet keys: set in the file with another format, they are an
	// error, so that nobody believes they apply.
	parquetOnly := func(key string) bool {
		if has(t, key) && formatOK && !parquet {
			c.report(p.key(key), "is only for the parquet format, and format is %s; remove %s or set format = \"parquet\"", o.Format, key)
			return false
		}
		return true
	}
	if n, ok := c.size(t, p, "row_group_size", defaultRowGroupSize); ok && parquetOnly("row_group_size") {
		switch {
		case n < minRowGroupSize || n > maxRowGroupSize:
			c.report(p.key("row_group_size"), "%s is out of range; allowed: %s to %s", FormatSize(n), FormatSize(minRowGroupSize), FormatSize(maxRowGroupSize))
		case parquet:
			o.RowGroupSize = n
		}
	}
	if keep, ok := c.boolean(t, p, "keep_payload", true); ok && parquetOnly("keep_payload") {
		o.KeepPayload = keep
	} else {
		o.KeepPayload = true
	}
	if s, ok := c.str(t, p, "on_type_error", string(formats.RejectTypeErrors)); ok && parquetOnly("on_type_error") {
		switch s := formats.TypeErrorPolicy(s); s {
		case formats.RejectTypeErrors, formats.NullTypeErrors:
			o.OnTypeError = s
		default:
			c.report(p.key("on_type_error"), "%q is not a type error policy; allowed: reject (the message goes under _jetlake/ instead of the data), null (the column is null)", s)
		}
	}
	if has(t, "columns") && parquetOnly("columns") {
		o.Columns = c.columns(t["columns"], p.key("columns"))
	}
	return o
}

// columns checks the [[output.columns]] entries.
func (c *checker) columns(v any, p keyPath) []Column {
	var tables []map[string]any
	switch v := v.(type) {
	case []map[string]any:
		tables = v
	case []any:
		for i, e := range v {
			if t, ok := e.(map[string]any); ok {
				tables = append(tables, t)
			} else {
				c.report(p.index(i+1), "must be a table, not %s", typeName(e))
				tables = append(tables, nil)
			}
		}
	default:
		c.report(p, "must be an array of tables, not %s; write a [[output.columns]] header for each column", typeName(v))
		return nil
	}
	seen := make(map[string]int)
	var out []Column
	for i, t := range tables {
		if t == nil {
			continue
		}
		cp := p.index(i + 1)
		col, ok := c.column(t, cp)
		if col.Name != "" {
			if j, dup := seen[col.Name]; dup {
				c.report(cp.key("name"), "%q is already the name of output.columns[%d]; column names must be unique", col.Name, j)
				ok = false
			} else {
				seen[col.Name] = i + 1
			}
		}
		if ok {
			out = append(out, col)
		}
	}
	return out
}

// column checks one [[output.columns]] entry; it reports false when the
// entry has a problem.
func (c *checker) column(t map[string]any, p keyPath) (Column, bool) {
	c.unknown(t, p, &columnSpec)
	nprobs := len(c.probs)
	var col Column

	if !has(t, "name") {
		c.report(p.key("name"), "missing; name the column, such as \"user_id\"")
	} else if name, ok := c.str(t, p, "name", ""); ok {
		switch {
		case !columnName.MatchString(name):
			c.report(p.key("name"), "%q is not a column name; use lower-case letters, digits and '_', not starting with a digit, such as \"user_id\"", name)
		case slices.Contains(formats.EnvelopeNames(), name):
			c.report(p.key("name"), "%q is the name of an envelope column; the names %s are taken", name, join(formats.EnvelopeNames()))
		default:
			col.Name = name
		}
	}

	if !has(t, "source") {
		c.report(p.key("source"), "missing; give the dotted path of the payload field, such as \"user.id\" or \"items.0.sku\"")
	} else if src, ok := c.str(t, p, "source", ""); ok {
		if src == "" || slices.Contains(strings.Split(src, "."), "") {
			c.report(p.key("source"), "%q is not a path; give member names (or array indexes) separated by dots, such as \"user.id\" or \"items.0.sku\"", src)
		} else {
			col.Source = src
		}
	}

	types := []formats.ColumnType{formats.TypeString, formats.TypeInt64, formats.TypeInt32, formats.TypeDouble,
		formats.TypeBoolean, formats.TypeTimestamp, formats.TypeDate, formats.TypeJSON}
	if !has(t, "type") {
		c.report(p.key("type"), "missing; allowed: %s", join(types))
	} else if typ, ok := c.str(t, p, "type", ""); ok {
		if slices.Contains(types, formats.ColumnType(typ)) {
			col.Type = formats.ColumnType(typ)
		} else {
			c.report(p.key("type"), "%q is not a column type; allowed: %s", typ, join(types))
		}
	}

	if u, ok := c.str(t, p, "unit", ""); ok && has(t, "unit") {
		switch {
		case col.Type != "" && col.Type != formats.TypeTimestamp:
			c.report(p.key("unit"), "is only for timestamp columns, and type is %s; remove unit", col.Type)
		case u == "s" || u == "ms" || u == "us" || u == "ns":
			col.Unit = u
		default:
			c.report(p.key("unit"), "%q is not a unit; allowed: s, ms, us, ns (of epoch numbers)", u)
		}
	}
	col.Coerce, _ = c.boolean(t, p, "coerce", false)
	return col, len(c.probs) == nprobs
}

// columnName is what a typed column may be called: a lower-case SQL
// identifier that Athena, Trino and DuckDB take without quoting.
var columnName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// rotationCheck is Rotation with which values are usable for checks that
// relate them to others, and which the file sets.
type rotationCheck struct {
	Rotation
	sizeOK, countOK, ageOK, bufferedOK bool
	sizeSet, countSet, ageSet          bool
	path                               keyPath
}

func (c *checker) rotation(t map[string]any, p keyPath) rotationCheck {
	c.unknown(t, p, &rotationSpec)
	r := rotationCheck{
		path:     p,
		sizeSet:  has(t, "max_file_size"),
		countSet: has(t, "max_messages_per_file"),
		ageSet:   has(t, "max_file_age"),
	}

	if n, ok := c.size(t, p, "max_file_size", defaultMaxFileSize); ok {
		if n < minFileSize || n > maxFileSize {
			c.report(p.key("max_file_size"), "%s is out of range; allowed: %s to %s", FormatSize(n), FormatSize(minFileSize), FormatSize(maxFileSize))
		} else {
			r.MaxFileSize, r.sizeOK = n, true
		}
	}
	if n, ok := c.integer(t, p, "max_messages_per_file", defaultMaxMessagesPerFile); ok {
		if n < 0 || n > maxMessagesPerFile {
			c.report(p.key("max_messages_per_file"), "%d is out of range; allowed: 0 (no count limit) to %d", n, maxMessagesPerFile)
		} else {
			r.MaxMessagesPerFile, r.countOK = int(n), true
		}
	}
	if d, ok := c.duration(t, p, "max_file_age", defaultMaxFileAge); ok {
		if d <= 0 {
			c.report(p.key("max_file_age"), "must be more than 0, such as \"1m\"")
		} else {
			r.MaxFileAge, r.ageOK = d, true
		}
	}
	if n, ok := c.size(t, p, "max_buffered_bytes", defaultMaxBufferedBytes); ok {
		switch {
		case n <= 0:
			c.report(p.key("max_buffered_bytes"), "must be more than 0, such as \"256MiB\"")
		case r.sizeOK && n < r.MaxFileSize:
			// Name the key the file sets, so the line points at it.
			if has(t, "max_buffered_bytes") || !r.sizeSet {
				c.report(p.key("max_buffered_bytes"), "%s is less than max_file_size (%s): the buffers must hold at least one full file; raise max_buffered_bytes or lower max_file_size", FormatSize(n), FormatSize(r.MaxFileSize))
			} else {
				c.report(p.key("max_file_size"), "%s is more than max_buffered_bytes (%s): the buffers must hold at least one full file; lower max_file_size or raise max_buffered_bytes", FormatSize(r.MaxFileSize), FormatSize(n))
			}
		default:
			r.MaxBufferedBytes, r.bufferedOK = n, true
		}
	}
	return r
}

// streams checks the [[streams]] entries and relates them to the rotation
// limits.
func (c *checker) streams(top map[string]any, connector string, rot rotationCheck) []Stream {
	p := keyPath{}.key("streams")
	// tables holds the entries that are tables, by 1-based index.
	tables := make(map[int]map[string]any)
	count := 0
	switch v := top["streams"].(type) {
	case nil:
		c.report(p, "missing; add a [[streams]] table for each stream to export")
		return nil
	case []map[string]any:
		for i, t := range v {
			tables[i+1] = t
		}
		count = len(v)
	case []any:
		for i, e := range v {
			if t, ok := e.(map[string]any); ok {
				tables[i+1] = t
			} else {
				c.report(p.index(i+1), "must be a table, not %s", typeName(e))
			}
		}
		count = len(v)
	default:
		c.report(p, "must be an array of tables, not %s; write a [[streams]] header for each stream", typeName(v))
		return nil
	}
	if count == 0 {
		c.report(p, "is empty; add a [[streams]] table for each stream to export")
		return nil
	}

	type pair struct{ stream, consumer string }
	pairs := make(map[pair]int)
	out := make([]Stream, 0, len(tables))
	for i := range count {
		t, ok := tables[i+1]
		if !ok {
			continue
		}
		sp := p.index(i + 1)
		s := c.stream(t, sp, connector, rot)
		s.Line = c.lines.line(sp)
		if s.Stream != "" && s.Consumer != "" {
			k := pair{s.Stream, s.Consumer}
			if j, ok := pairs[k]; ok {
				c.report(sp.key("consumer"), "streams[%d] already reads stream %q with consumer %q; give each entry of one stream its own consumer", j, s.Stream, s.Consumer)
			} else {
				pairs[k] = i + 1
			}
		}
		out = append(out, s)
	}
	return out
}

func (c *checker) stream(t map[string]any, p keyPath, connector string, rot rotationCheck) Stream {
	c.unknown(t, p, &streamSpec)
	s := Stream{DeliverPolicy: DeliverAll, Consumer: connector}

	if !has(t, "stream") {
		c.report(p.key("stream"), "missing; name the JetStream stream to export, such as \"EVENTS\"")
	} else if name, ok := c.str(t, p, "stream", ""); ok {
		if why := checkJetStreamName(name); why != "" {
			c.report(p.key("stream"), "%q is not a stream name: it %s", name, why)
		} else {
			s.Stream = name
		}
	}

	if subjects, ok := c.stringList(t, p, "subjects"); ok {
		s.Subjects = c.subjects(subjects, p.key("subjects"))
	}

	if name, ok := c.str(t, p, "consumer", connector); ok && has(t, "consumer") {
		if why := checkJetStreamName(name); why != "" {
			c.report(p.key("consumer"), "%q is not a consumer name: it %s", name, why)
			s.Consumer = ""
		} else {
			s.Consumer = name
		}
	}

	if d, ok := c.str(t, p, "deliver_policy", DeliverAll); ok {
		switch d {
		case DeliverAll, DeliverNew:
			s.DeliverPolicy = d
		default:
			c.report(p.key("deliver_policy"), "%q is not a deliver policy; allowed: all (from the first message in the stream), new (from the first message published after the consumer is created)", d)
		}
	}

	ackOK := false
	if d, ok := c.duration(t, p, "ack_wait", defaultAckWait); ok {
		if d < minAckWait {
			c.report(p.key("ack_wait"), "%s is less than the minimum of %s", FormatDuration(d), FormatDuration(minAckWait))
		} else {
			s.AckWait, ackOK = d, true
		}
	}
	if ackOK && rot.ageOK && 2*rot.MaxFileAge > s.AckWait {
		// A message may wait max_file_age in a buffer before its upload
		// starts, and must be acked before ack_wait ends; half of ack_wait
		// is left for the upload and its retries.
		age, ack := FormatDuration(rot.MaxFileAge), FormatDuration(s.AckWait)
		if rot.ageSet || !has(t, "ack_wait") {
			c.report(rot.path.key("max_file_age"), "%s is more than half of %s (%s): a message waits up to max_file_age in a buffer and must then be uploaded and acked within ack_wait; lower max_file_age to at most %s or raise %s to at least %s",
				age, p.key("ack_wait"), ack, FormatDuration(s.AckWait/2), p.key("ack_wait"), FormatDuration(2*rot.MaxFileAge))
		} else {
			c.report(p.key("ack_wait"), "%s is less than twice rotation.max_file_age (%s): a message waits up to max_file_age in a buffer and must then be uploaded and acked within ack_wait; raise ack_wait to at least %s or lower rotation.max_file_age to at most %s",
				ack, age, FormatDuration(2*rot.MaxFileAge), FormatDuration(s.AckWait/2))
		}
	}

	if f, ok := c.str(t, p, "failover", ""); ok {
		switch f {
		case "", FailoverPinned:
			s.Failover = f
		default:
			c.report(p.key("failover"), "%q is not a failover mode; allowed: \"pinned\" (active/standby through a priority group with the pinned_client policy), or leave it out", f)
		}
	}
	if d, ok := c.duration(t, p, "priority_timeout", defaultPriorityTimeout); ok {
		switch {
		case has(t, "priority_timeout") && s.Failover != FailoverPinned:
			c.report(p.key("priority_timeout"), "is set but failover is not \"pinned\"; set failover = \"pinned\" or leave priority_timeout out")
		case d < 5*time.Second:
			c.report(p.key("priority_timeout"), "%s is less than the minimum of 5s", d)
		case s.Failover == FailoverPinned:
			s.PriorityTimeout = d
		}
	}
	if n, ok := c.integer(t, p, "max_ack_pending", 0); ok {
		switch {
		case n < 0:
			c.report(p.key("max_ack_pending"), "%d is negative; allowed: 0 (derived from the rotation limits) or more", n)
		case n == 0:
			if rot.bufferedOK && rot.countOK {
				s.MaxAckPending = derivedAckPending(rot.Rotation)
			}
		default:
			s.MaxAckPending = int(n)
		}
	}
	return s
}

// derivedAckPending is the max_ack_pending of a consumer whose file says 0:
// one pending message per 256 bytes of the buffer budget, within
// [minDerivedAckPending, maxDerivedAckPending], and room for two full files
// so that a count limit can always be reached.
func derivedAckPending(r Rotation) int {
	n := min(max(r.MaxBufferedBytes/derivedAckPendingUnit, minDerivedAckPending), maxDerivedAckPending)
	return max(int(n), 2*r.MaxMessagesPerFile)
}

// subjects checks filter subjects and returns the valid ones.
func (c *checker) subjects(subjects []string, p keyPath) []string {
	var out []string
	for i, s := range subjects {
		ep := p.index(i + 1)
		if why := checkSubject(s); why != "" {
			c.report(ep, "%q is not a valid subject: %s", s, why)
			continue
		}
		if slices.Contains(out, s) {
			c.report(ep, "%q is listed twice", s)
			continue
		}
		overlap := false
		for _, prev := range out {
			if SubjectsOverlap(prev, s) {
				c.report(ep, "%q overlaps %q; the filter subjects of one consumer must not overlap", s, prev)
				overlap = true
				break
			}
		}
		if !overlap {
			out = append(out, s)
		}
	}
	return out
}

// checkTemplate checks that the path template suits the streams and that
// every object key it renders fits in S3's key length limit.
func (c *checker) checkTemplate(conn *Connector, out outputCheck, s3ok bool) {
	tpl := out.PathTemplate
	if tpl == nil {
		return
	}
	key := keyPath{}.key("output").key("path_template")

	var names []string
	for _, s := range conn.Streams {
		if s.Stream != "" && !slices.Contains(names, s.Stream) {
			names = append(names, s.Stream)
		}
	}
	if len(names) > 1 && !tpl.Uses(pathtemplate.VarStream) {
		c.report(key, "%q does not use {stream}, but the connector reads streams %s: their sequence numbers overlap, so object names would collide; add {stream} to the template", tpl.String(), strings.Join(names, ", "))
	}

	if !s3ok {
		return
	}
	longest, dir := 0, 0
	for _, s := range conn.Streams {
		dir = max(dir, maxDirLen(tpl, s))
		n := maxObjectName + dir
		if conn.S3.Prefix != "" {
			n += len(conn.S3.Prefix) + 1
		}
		longest = max(longest, n)
	}
	if longest > pathtemplate.MaxKeyLen {
		if !out.templateSet {
			key = keyPath{}.key("s3").key("prefix")
		}
		c.report(key, "object keys may be %d bytes long (prefix %d, directory up to %d, object name up to %d), more than S3's limit of %d; shorten s3.prefix or the literal text of output.path_template",
			longest, len(conn.S3.Prefix), dir, maxObjectName, pathtemplate.MaxKeyLen)
	}
}

// maxDirLen is the longest directory tpl renders for stream s: the stream and
// consumer names are known, a subject may render to MaxValueLen bytes.
func maxDirLen(tpl *pathtemplate.Template, s Stream) int {
	n := 0
	for _, part := range tpl.Parts() {
		switch part.Var {
		case pathtemplate.VarLiteral:
			n += len(part.Text)
		case pathtemplate.VarStream:
			n += len(pathtemplate.AppendEscaped(nil, s.Stream))
		case pathtemplate.VarConsumer:
			n += len(pathtemplate.AppendEscaped(nil, s.Consumer))
		case pathtemplate.VarSubject, pathtemplate.VarSubjectToken:
			n += pathtemplate.MaxValueLen
		case pathtemplate.VarDate:
			n += len("2006-01-02")
		case pathtemplate.VarYear:
			n += len("2006")
		default: // month, day, hour, minute
			n += 2
		}
	}
	return n
}

// join lists values for a message: "a, b, c".
func join[S ~string](values []S) string {
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(v))
	}
	return b.String()
}
