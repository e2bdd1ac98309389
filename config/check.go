package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// checker walks the decoded TOML of one file, collecting problems.
type checker struct {
	file  string
	lines *lineIndex
	probs Errors
}

func (c *checker) report(p keyPath, format string, args ...any) {
	c.probs = append(c.probs, &Problem{
		File: c.file,
		Line: c.lines.line(p),
		Key:  p.String(),
		Msg:  fmt.Sprintf(format, args...),
	})
}

// syntaxProblem turns a decoding error into a problem.
func syntaxProblem(file string, err error) *Problem {
	line, msg := 1, err.Error()
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line, msg = max(pe.Position.Line, 1), pe.Message
	}
	// The message may quote the offending input, line breaks included; a
	// problem is one line.
	msg = strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(msg)
	return &Problem{File: file, Line: line, Key: "toml", Msg: "syntax error: " + msg}
}

// spec describes the keys one table may hold.
type spec struct {
	name    string            // key of the table in its parent; "" for the top level
	where   string            // "in [rotation]", for messages
	header  string            // "[rotation]", for messages
	keys    []string          // allowed keys, in the order the documentation lists them
	secrets map[string]string // keys that would hold a secret, and what to write instead
}

const neverSecrets = "secrets are never read from the file; "

var (
	topSpec = spec{
		where: "at the top level",
		keys:  []string{"name", "enabled", "shutdown_timeout", "ready_upload_failure", "nats", "streams", "s3", "output", "rotation", "state", "iceberg"},
	}
	natsSpec = spec{
		name: "nats", where: "in [nats]", header: "[nats]",
		keys: []string{"url", "creds_file", "nkey_seed_file", "token_env", "user", "password_env", "tls_ca_file", "tls_cert_file", "tls_key_file",
			"tls_required", "allow_insecure_auth", "jetstream_domain", "jetstream_api_prefix", "inbox_prefix"},
		secrets: map[string]string{
			"password":  neverSecrets + "name an environment variable with password_env",
			"token":     neverSecrets + "name an environment variable with token_env",
			"nkey_seed": neverSecrets + "name the seed file with nkey_seed_file",
			"seed":      neverSecrets + "name the seed file with nkey_seed_file",
		},
	}
	streamSpec = spec{
		name: "streams", where: "in [[streams]]", header: "[[streams]]",
		keys: []string{"stream", "subjects", "consumer", "deliver_policy", "ack_wait", "max_ack_pending", "failover", "priority_timeout", "partitions", "lease_ttl", "consumer_storage"},
	}
	s3Spec = spec{
		name: "s3", where: "in [s3]", header: "[s3]",
		keys: []string{"bucket", "endpoint", "region", "prefix", "path_style", "access_key_id_env", "secret_access_key_env", "upload_concurrency",
			"allow_insecure_http", "tls_ca_file", "sse", "sse_kms_key_id", "storage_class", "checksum"},
		secrets: map[string]string{
			"access_key_id":     neverSecrets + "name an environment variable with access_key_id_env",
			"access_key":        neverSecrets + "name an environment variable with access_key_id_env",
			"secret_access_key": neverSecrets + "name an environment variable with secret_access_key_env",
			"secret_key":        neverSecrets + "name an environment variable with secret_access_key_env",
			"session_token":     neverSecrets + "set the AWS_SESSION_TOKEN environment variable",
		},
	}
	outputSpec = spec{
		name: "output", where: "in [output]", header: "[output]",
		keys: []string{"format", "compression", "path_template", "group_by", "include_metadata", "include_headers", "raw_delimiter",
			"row_group_size", "keep_payload", "on_type_error", "columns"},
	}
	columnSpec = spec{
		name: "columns", where: "in [[output.columns]]", header: "[[output.columns]]",
		keys: []string{"name", "source", "type", "unit", "coerce"},
	}
	stateSpec = spec{
		name: "state", where: "in [state]", header: "[state]",
		keys: []string{"bucket", "replicas"},
	}
	icebergSpec = spec{
		name: "iceberg", where: "in [iceberg]", header: "[iceberg]",
		keys: []string{"catalog", "uri", "allow_insecure_sslmode", "warehouse", "token_env", "credential_env", "sigv4_service", "region", "catalog_id", "namespace", "table", "partitioning", "commit_interval", "keep_snapshots", "snapshot_retention", "compact_after", "remove_orphans", "orphan_age"},
		secrets: map[string]string{
			"token":      neverSecrets + "name the environment variable that holds it with token_env",
			"credential": neverSecrets + "name the environment variable that holds it with credential_env",
		},
	}
	rotationSpec = spec{
		name: "rotation", where: "in [rotation]", header: "[rotation]",
		keys: []string{"max_file_size", "max_messages_per_file", "max_file_age", "max_buffered_bytes"},
	}
	allSpecs = []*spec{&topSpec, &natsSpec, &streamSpec, &s3Spec, &outputSpec, &columnSpec, &rotationSpec, &stateSpec, &icebergSpec}
)

// Keys returns the keys a connector file may set in table, in the order
// the documentation lists them: table is a header without its brackets
// ("nats", "streams", "output.columns"), or "" for the top level. It
// returns nil for a table config does not know.
func Keys(table string) []string {
	for _, sp := range allSpecs {
		if strings.Trim(sp.header, "[]") == table {
			return slices.Clone(sp.keys)
		}
	}
	return nil
}

// unknown reports every key of t, the table at p, that sp does not allow.
func (c *checker) unknown(t map[string]any, p keyPath, sp *spec) {
	for _, k := range sortedKeys(t) {
		if slices.Contains(sp.keys, k) {
			continue
		}
		if msg, ok := sp.secrets[k]; ok {
			c.report(p.key(k), "%s", msg)
			continue
		}
		c.report(p.key(k), "unknown key%s; allowed keys %s: %s", suggest(k, sp), sp.where, strings.Join(sp.keys, ", "))
	}
}

// suggest names the table an unknown key belongs in, or an allowed key it
// is a misspelling of.
func suggest(k string, sp *spec) string {
	for _, other := range allSpecs {
		if other != sp && slices.Contains(other.keys, k) {
			return fmt.Sprintf(" here (%s belongs %s)", k, other.where)
		}
	}
	best, bestDist := "", 3
	for _, allowed := range sp.keys {
		if d := editDistance(strings.ToLower(k), allowed); d < bestDist && d < len(allowed)/2 {
			best, bestDist = allowed, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return ""
}

func sortedKeys(t map[string]any) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// typeName names the TOML type of a decoded value.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date-time"
}

func has(t map[string]any, key string) bool {
	_, ok := t[key]
	return ok
}

// The getters below return def when key is absent from t, the table at p.
// They return false after reporting a value of the wrong type or form.

// table returns the table sp describes, an empty one when it is absent.
func (c *checker) table(t map[string]any, p keyPath, sp *spec) (map[string]any, keyPath, bool) {
	p = p.key(sp.name)
	v, ok := t[sp.name]
	if !ok {
		return map[string]any{}, p, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.report(p, "must be a table, not %s; write the keys under a %s header", typeName(v), sp.header)
		return nil, p, false
	}
	return m, p, true
}

func (c *checker) str(t map[string]any, p keyPath, key, def string) (string, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	s, ok := v.(string)
	if !ok {
		c.report(p.key(key), "must be a string, not %s", typeName(v))
		return def, false
	}
	return s, true
}

func (c *checker) boolean(t map[string]any, p keyPath, key string, def bool) (bool, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	b, ok := v.(bool)
	if !ok {
		c.report(p.key(key), "must be true or false, not %s", typeName(v))
		return def, false
	}
	return b, true
}

func (c *checker) integer(t map[string]any, p keyPath, key string, def int64) (int64, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	n, ok := v.(int64)
	if !ok {
		c.report(p.key(key), "must be a whole number, not %s", typeName(v))
		return def, false
	}
	return n, true
}

func (c *checker) duration(t map[string]any, p keyPath, key string, def time.Duration) (time.Duration, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	s, ok := v.(string)
	if !ok {
		c.report(p.key(key), "must be a duration string such as \"90s\" or \"2m\", not %s", typeName(v))
		return def, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.report(p.key(key), "%q is not a duration; write a number and a unit (ms, s, m, h), such as \"90s\" or \"2m\"", s)
		return def, false
	}
	return d, true
}

func (c *checker) size(t map[string]any, p keyPath, key string, def int64) (int64, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	switch v := v.(type) {
	case int64:
		return v, true
	case string:
		n, err := parseSize(v)
		if err != nil {
			c.report(p.key(key), "%q is not a size: %v; such as \"8MiB\"", v, err)
			return def, false
		}
		return n, true
	}
	c.report(p.key(key), "must be a size such as \"8MiB\", not %s", typeName(v))
	return def, false
}

func (c *checker) stringList(t map[string]any, p keyPath, key string) ([]string, bool) {
	v, ok := t[key]
	if !ok {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		c.report(p.key(key), "must be an array of strings such as [\"events.>\"], not %s", typeName(v))
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			c.report(p.key(key), "must be an array of strings such as [\"events.>\"]; it holds %s", typeName(e))
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// FormatDuration formats d as a connector file writes it, without zero
// minutes or seconds: "2m", not "2m0s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
