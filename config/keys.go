package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// The key tables of docs/configuration.md are rendered from the specs
// below; TestReferenceIsGenerated fails when the page and the specs differ.
// To add a key, add its row to its table's spec here and regenerate the page:
//
//	go generate ./config
//
//go:generate go test -run TestReferenceIsGenerated -update

// Key is one key a connector file may set, as the configuration reference
// lists it: its row of the key table of its TOML table. The checker allows
// exactly the keys of these rows, and docs/configuration.md shows them.
// Each row also binds the key to the field of Connector that holds its
// value: the checker decodes, defaults and checks the key through it, and
// Connector.Settings writes its effective value.
type Key struct {
	// Name is the key as a file writes it.
	Name string
	// Type is the TOML type the key takes: string, boolean, integer,
	// duration, size, array of strings, table or array of tables. A row
	// leaves it out: its binding knows.
	Type string
	// Default is what applies when the key is absent, in markdown:
	// "required", "none", or the value as a file would write it. A row
	// leaves it out when its binding has one value for a default, or none.
	Default string
	// Allowed is what the key allows and does, in markdown.
	Allowed string

	bind binding // where the value goes, its default and its check
}

// spec describes the keys one table may hold.
type spec struct {
	name    string            // key of the table in its parent; "" for the top level
	where   string            // "in [rotation]", for messages
	header  string            // "[rotation]", for messages; "" for the top level
	keys    []Key             // allowed keys, in the order the documentation lists them
	secrets map[string]string // keys that would hold a secret, and what to write instead
}

// allows reports whether the table sp describes may hold key k.
func (sp *spec) allows(k string) bool {
	return slices.ContainsFunc(sp.keys, func(key Key) bool { return key.Name == k })
}

// names lists the keys sp allows, in documentation order.
func (sp *spec) names() []string {
	names := make([]string, len(sp.keys))
	for i, k := range sp.keys {
		names[i] = k.Name
	}
	return names
}

// title names the table in the documentation: its header, or "top level".
func (sp *spec) title() string {
	if sp.header == "" {
		return "top level"
	}
	return sp.header
}

// Keys returns the keys a connector file may set in table, in the order
// the documentation lists them: table is a header without its brackets
// ("nats", "streams", "output.columns"), or "" for the top level. It
// returns nil for a table config does not know.
func Keys(table string) []string {
	for _, sp := range allSpecs {
		if strings.Trim(sp.header, "[]") == table {
			return sp.names()
		}
	}
	return nil
}

// filled returns sp with the Type and the Default of each row that leaves
// them out taken from its binding.
func filled(sp spec) spec {
	for i, k := range sp.keys {
		if k.Type == "" {
			sp.keys[i].Type = k.bind.typ()
		}
		if k.Default == "" {
			sp.keys[i].Default = k.bind.defaultText()
		}
	}
	return sp
}

// quoted is a string value in a code span: `"us-east-1"`.
func quoted(s string) string { return "`\"" + s + "\"`" }

const neverSecrets = "secrets are never read from the file; "

var (
	topSpec = filled(spec{
		where: "at the top level",
		keys: []Key{
			{Name: "name",
				Allowed: "1–255 of `A-Z a-z 0-9 _ -`. Unique among the files of a directory. Used in logs and as the default consumer name.",
				bind: text(func(c *Connector) *string { return &c.Name }).
					required("missing; every connector needs a name of letters, digits, '_' and '-', such as \"events\"").
					checked(quotedWhy(checkConnectorName))},
			{Name: "enabled",
				Allowed: "A disabled connector is loaded and validated, but not run.",
				bind:    boolean(func(c *Connector) *bool { return &c.Enabled }).byDefault(true)},
			{Name: "shutdown_timeout",
				Allowed: "More than 0. How long a stopping connector may take to upload what it holds.",
				bind: duration(func(c *Connector) *time.Duration { return &c.ShutdownTimeout }).
					byDefault(defaultShutdownTimeout).checked(moreThanZero("30s"))},
			{Name: "ready_upload_failure",
				Allowed: "More than 0. How long uploads may fail in a row before `/readyz` reports the connector unready.",
				bind: duration(func(c *Connector) *time.Duration { return &c.ReadyUploadFailure }).
					byDefault(defaultReadyUploadFailure).checked(moreThanZero("1m"))},
			{Name: "nats", Default: "required",
				Allowed: "The NATS server to read from: [`[nats]`](#nats).",
				bind:    subTable(func(c *Connector) *NATS { return &c.NATS }, &natsSpec, (*checker).natsCrossChecks)},
			{Name: "streams",
				Allowed: "The streams to export, at least one: [`[[streams]]`](#streams).",
				bind: &tableList[Connector, Stream]{get: func(c *Connector) *[]Stream { return &c.Streams }, sp: &streamSpec, what: "stream",
					required:    "missing; add a [[streams]] table for each stream to export",
					empty:       "is empty; add a [[streams]] table for each stream to export",
					keepInvalid: true, cross: (*checker).streamCrossChecks}},
			{Name: "s3", Default: "required",
				Allowed: "The bucket to write to: [`[s3]`](#s3).",
				bind:    subTable(func(c *Connector) *S3 { return &c.S3 }, &s3Spec, (*checker).s3CrossChecks)},
			{Name: "output",
				Allowed: "The format and the layout of the objects: [`[output]`](#output).",
				bind:    subTable(func(c *Connector) *Output { return &c.Output }, &outputSpec, (*checker).outputCrossChecks)},
			{Name: "rotation",
				Allowed: "When a file is closed and uploaded: [`[rotation]`](#rotation).",
				bind:    subTable(func(c *Connector) *Rotation { return &c.Rotation }, &rotationSpec, (*checker).rotationCrossChecks)},
			{Name: "state",
				Allowed: "Where the intents of uploads in flight are recorded: [`[state]`](#state).",
				bind:    subTable(func(c *Connector) *State { return &c.State }, &stateSpec, nil)},
			{Name: "iceberg", Default: "none (bare objects)",
				Allowed: "An Apache Iceberg table to write instead of bare objects: [`[iceberg]`](#iceberg).",
				bind:    optionalTable(func(c *Connector) **Iceberg { return &c.Iceberg }, &icebergSpec, (*checker).icebergCrossChecks)},
		},
	})
	natsSpec = filled(spec{
		name: "nats", where: "in [nats]", header: "[nats]",
		keys: []Key{
			{Name: "url",
				Allowed: "One or more server URLs separated by commas, each `scheme://host[:port]` with scheme `nats`, `tls`, `ws` or `wss`. No user or password in the URL. jetlake connects only to these: servers a cluster advertises are not dialled, so credentials never go to a host the file does not name (list every seed you want used).",
				bind: text(func(n *NATS) *string { return &n.URL }).required("missing; " + natsURLHelp).checked(checkURL).
					showing(func(n *NATS, _ *Connector) string { return redactURLs(n.URL) })},
			{Name: "creds_file",
				Allowed: "Path of a `.creds` file (JWT and nkey seed).",
				bind:    fileField(func(n *NATS) *string { return &n.CredsFile })},
			{Name: "nkey_seed_file",
				Allowed: "Path of a file holding an nkey seed.",
				bind:    fileField(func(n *NATS) *string { return &n.NkeySeedFile })},
			{Name: "token_env",
				Allowed: "Name of the environment variable that holds the token.",
				bind:    envField(func(n *NATS) *string { return &n.TokenEnv })},
			{Name: "user",
				Allowed: "User name; requires `password_env`.",
				bind:    text(func(n *NATS) *string { return &n.User })},
			{Name: "password_env",
				Allowed: "Name of the environment variable that holds the password; requires `user`.",
				bind:    envField(func(n *NATS) *string { return &n.PasswordEnv }).noted(noCredentials)},
			{Name: "allow_insecure_auth",
				Allowed: "A password or token is refused over plain text (a `nats://` or `ws://` URL without `tls_required`, `tls_ca_file` or `tls_cert_file`) to a host that is not a loopback address, unless this is `true`: it would cross the network unencrypted. Creds and nkey files sign a challenge and send no secret.",
				bind:    boolean(func(n *NATS) *bool { return &n.AllowInsecureAuth }).byDefault(false)},
			{Name: "tls_ca_file",
				Allowed: "CA certificate(s) to verify the server with. Setting it turns TLS on, whatever the URL's scheme: a server that offers no TLS is refused (\"secure connection not available\"), never used in plain text.",
				bind:    fileField(func(n *NATS) *string { return &n.TLSCAFile })},
			{Name: "tls_cert_file",
				Allowed: "Client certificate; requires `tls_key_file`. Like `tls_ca_file`, it turns TLS on.",
				bind:    fileField(func(n *NATS) *string { return &n.TLSCertFile })},
			{Name: "tls_key_file",
				Allowed: "Client private key; requires `tls_cert_file`.",
				bind:    fileField(func(n *NATS) *string { return &n.TLSKeyFile })},
			{Name: "tls_required",
				Allowed: "Refuse to talk to a server without TLS.",
				bind:    boolean(func(n *NATS) *bool { return &n.TLSRequired }).byDefault(false)},
			{Name: "jetstream_domain",
				Allowed: "JetStream domain (leaf-node setups); letters, digits, `_`, `-`. Not with `jetstream_api_prefix`.",
				bind: text(func(n *NATS) *string { return &n.JetStreamDomain }).
					checked(optional(quotedWhy(checkToken))).keptWhenInvalid()},
			{Name: "jetstream_api_prefix",
				Allowed: "JetStream API prefix, e.g. for a JetStream imported from another account (`\"$JS.hub.API\"`).",
				bind: text(func(n *NATS) *string { return &n.JetStreamAPIPrefix }).
					checked(optional(subjectPrefix("$JS.hub.API"))).keptWhenInvalid()},
			{Name: "inbox_prefix", Default: "`_INBOX`",
				Allowed: "Inbox prefix for replies, for accounts whose permissions allow only a specific one (`\"_INBOX_jetlake\"`).",
				bind: text(func(n *NATS) *string { return &n.InboxPrefix }).checked(optional(subjectPrefix("_INBOX_jetlake"))).
					showing(func(n *NATS, _ *Connector) string { return cmp.Or(n.InboxPrefix, defaultInboxPrefix) })},
		},
		secrets: map[string]string{
			"password":  neverSecrets + "name an environment variable with password_env",
			"token":     neverSecrets + "name an environment variable with token_env",
			"nkey_seed": neverSecrets + "name the seed file with nkey_seed_file",
			"seed":      neverSecrets + "name the seed file with nkey_seed_file",
		},
	})
	streamSpec = filled(spec{
		name: "streams", where: "in [[streams]]", header: "[[streams]]",
		keys: []Key{
			{Name: "stream",
				Allowed: "A JetStream stream name: no whitespace, control characters, `.`, `*`, `>`, `/` or `\\`; at most 255 bytes.",
				bind: text(func(s *Stream) *string { return &s.Stream }).
					required("missing; name the JetStream stream to export, such as \"EVENTS\"").checked(jetStreamName("stream"))},
			{Name: "subjects", Default: "`[]` (the whole stream)",
				Allowed: "Consumer filter subjects: tokens separated by `.`, none empty, no whitespace; `*` and `>` are whole tokens and `>` only the last. No duplicates, and no two that overlap (`events.>` and `events.a`).",
				bind:    at(subjectsKind, func(s *Stream) *[]string { return &s.Subjects }).byDefault(nil).noted(wholeStream)},
			{Name: "consumer", Default: "the connector's `name`",
				Allowed: "Durable consumer name, same rules as `stream`. Each (stream, consumer) pair appears once per file.",
				bind: text(func(s *Stream) *string { return &s.Consumer }).checked(jetStreamName("consumer")).
					defaultFrom(func(_ *Stream, c *Connector) string { return c.Name })},
			{Name: "deliver_policy",
				Allowed: "`all` (start from the first message in the stream) or `new` (start from messages published after the consumer is created). Only where a connector without an export record starts: a consumer created again later delivers from the first sequence the record lacks.",
				bind: text(func(s *Stream) *string { return &s.DeliverPolicy }).byDefault(DeliverAll).
					checked(oneOf("is not a deliver policy; allowed: all (from the first message in the stream), new (from the first message published after the consumer is created)", DeliverAll, DeliverNew)).
					noted(func(*Stream) string { return "only where a consumer without an export record starts" })},
			{Name: "consumer_storage", Default: quoted(DefaultConsumerStorage) + " for a consumer jetlake creates; an existing consumer keeps its own",
				Allowed: "`memory`: nats-server keeps the consumer's state in memory and does not rewrite its unacked set to disk every 100 ms; after a server restart (or a whole R3 cluster's) the consumer starts empty or is gone, and jetlake rebuilds it from its export record. `file`: on disk. Set, it also applies to an existing consumer kept otherwise: jetlake deletes it and creates it again there from the export record, with one log line.",
				bind: text(func(s *Stream) *string { return &s.ConsumerStorage }).
					checked(oneOf("is not a consumer storage; allowed: memory (the server keeps the consumer's state in memory; jetlake rebuilds it from its export record after a server restart), file (on disk)", StorageMemory, StorageFile)).
					showing(func(s *Stream, _ *Connector) string { return cmp.Or(s.ConsumerStorage, DefaultConsumerStorage) }).noted(storageNote)},
			{Name: "ack_wait",
				Allowed: "At least `10s`, and at least twice `rotation.max_file_age` (see below). The server's AckWait of a stream read with explicit acks (work-queue and interest retention); for every stream, an upload attempt lasts at most a third of it (at least 5 s, at most 5 min).",
				bind:    duration(func(s *Stream) *time.Duration { return &s.AckWait }).byDefault(defaultAckWait).checked(atLeast(minAckWait))},
			{Name: "max_ack_pending", Default: "`0` (derived)",
				Allowed: "`0` derives it from the rotation limits (see below); otherwise at least 1. A value below `rotation.max_messages_per_file` is allowed: files are then cut when the held messages near the limit (rotation reason `pending`). Negative is an error. A stream with limits retention is read without acks, and its consumer has no MaxAckPending: the memory budget alone bounds what jetlake holds.",
				bind:    integer(func(s *Stream) *int { return &s.MaxAckPending }).byDefault(0).checked(notNegative)},
			{Name: "failover",
				Allowed: "`pinned`: active/standby instances on this consumer through a priority group with the `pinned_client` policy; see [Running more than one](operations.md#running-more-than-one).",
				bind: text(func(s *Stream) *string { return &s.Failover }).
					checked(optional(oneOf("is not a failover mode; allowed: \"pinned\" (active/standby through a priority group with the pinned_client policy), or leave it out", FailoverPinned)))},
			{Name: "priority_timeout",
				Allowed: "With `failover = \"pinned\"`: how long the pinned instance may send no pull request before another is pinned. At least `5s`.",
				bind: duration(func(s *Stream) *time.Duration { return &s.PriorityTimeout }).byDefault(defaultPriorityTimeout).
					checked(minPriorityTimeout).shownWhen(func(s *Stream, _ *Connector) bool { return s.Failover != "" })},
			{Name: "partitions", Default: "`1`",
				Allowed: "`1` (not partitioned) to `1024`: split the stream into this many partitions that instances share; implies `failover = \"pinned\"`. See [Running more than one](operations.md#running-more-than-one).",
				bind: integer(func(s *Stream) *int { return &s.Partitions }).checked(inRange(1, MaxPartitions, fmt.Sprintf("1 (not partitioned) to %d", MaxPartitions))).
					shownWhen(func(s *Stream, _ *Connector) bool { return s.Partitioned() })},
			{Name: "lease_ttl",
				Allowed: "With `partitions`: how long a partition's lease lasts unless renewed (every third of it). At least `2s`.",
				bind: duration(func(s *Stream) *time.Duration { return &s.LeaseTTL }).byDefault(defaultLeaseTTL).checked(atLeast(minLeaseTTL)).
					shownWhen(func(s *Stream, _ *Connector) bool { return s.Partitioned() })},
		},
	})
	s3Spec = filled(spec{
		name: "s3", where: "in [s3]", header: "[s3]",
		keys: []Key{
			{Name: "bucket",
				Allowed: "3–63 lowercase letters, digits, `.` and `-`, starting and ending with a letter or digit; no `..`, `.-` or `-.`; not an IP address. The bucket must exist.",
				bind: text(func(s *S3) *string { return &s.Bucket }).
					required("missing; name the bucket objects are written to, such as \"lake\"").checked(bucketName)},
			{Name: "endpoint", Default: "none (AWS S3)",
				Allowed: "`http://` or `https://` URL with a host and no path, query or credentials, e.g. `\"http://127.0.0.1:9000\"` for MinIO.",
				bind: text(func(s *S3) *string { return &s.Endpoint }).checked(optional(endpointURL)).keptWhenInvalid().
					showing(func(s *S3, _ *Connector) string { return RedactURL(s.Endpoint) }).noted(awsEndpoint)},
			{Name: "region",
				Allowed: "Letters, digits, `-` and `_`.",
				bind:    text(func(s *S3) *string { return &s.Region }).byDefault(defaultRegion).checked(quotedWhy(checkRegion))},
			{Name: "prefix",
				Allowed: "Key prefix of every object. Valid UTF-8; no leading or trailing `/`; no empty (`//`), `.` or `..` segments; no control characters or `\\`.",
				bind:    text(func(s *S3) *string { return &s.Prefix }).byDefault("").checked(quotedWhy(checkPrefix))},
			{Name: "path_style", Default: "`true` when `endpoint` is set, else `false`",
				Allowed: "Path-style requests (`https://host/bucket/key`) instead of virtual-hosted ones (`https://bucket.host/key`).",
				bind: boolean(func(s *S3) *bool { return &s.PathStyle }).
					defaultFrom(func(s *S3, _ *Connector) bool { return s.Endpoint != "" })},
			{Name: "access_key_id_env",
				Allowed: "Name of the environment variable that holds the access key id. Set together with `secret_access_key_env`.",
				bind:    envField(func(s *S3) *string { return &s.AccessKeyIDEnv }).noted(credentialChain)},
			{Name: "secret_access_key_env",
				Allowed: "Name of the environment variable that holds the secret access key. Set together with `access_key_id_env`.",
				bind:    envField(func(s *S3) *string { return &s.SecretAccessKeyEnv })},
			{Name: "upload_concurrency",
				Allowed: "`1`–`64`: uploads of objects over 1 MiB in flight at once for this connector; smaller objects (a request each, whose cost is the store's per request) may have up to four times as many in flight in all, within `max_buffered_bytes`. The files of one buffer (one subject, or one path with `group_by = \"path\"`) are uploaded one after the other, in the order they were cut; other buffers' files go ahead meanwhile.",
				bind: integer(func(s *S3) *int { return &s.UploadConcurrency }).byDefault(defaultUploadConcurrency).
					checked(inRange(1, maxUploadConcurrency, ""))},
			{Name: "allow_insecure_http",
				Allowed: "An `http://` endpoint is refused unless its host is a loopback address (`127.0.0.1`, `::1`, `localhost`) or this is `true`: credentials and data would cross the network unencrypted.",
				bind:    boolean(func(s *S3) *bool { return &s.AllowInsecureHTTP }).byDefault(false)},
			{Name: "tls_ca_file",
				Allowed: "PEM CA bundle to verify an `https://` endpoint with (a private CA); an Iceberg connector's table files are read and written with it too.",
				bind:    fileField(func(s *S3) *string { return &s.TLSCAFile })},
			{Name: "sse",
				Allowed: "Server-side encryption: `s3` (SSE-S3) or `kms` (SSE-KMS).",
				bind: text(func(s *S3) *string { return &s.SSE }).
					checked(optional(oneOf("is not a server-side encryption; allowed: \"s3\" (SSE-S3), \"kms\" (SSE-KMS, with sse_kms_key_id)", SSES3, SSEKMS)))},
			{Name: "sse_kms_key_id", Default: "the bucket's default key",
				Allowed: "With `sse = \"kms\"`: the KMS key id or ARN.",
				bind:    text(func(s *S3) *string { return &s.SSEKMSKeyID })},
			{Name: "storage_class", Default: "the bucket's default",
				Allowed: "e.g. `STANDARD_IA`, `INTELLIGENT_TIERING`.",
				bind:    text(func(s *S3) *string { return &s.StorageClass }).checked(optional(storageClass))},
			{Name: "checksum",
				Allowed: "What the store checks every upload's body against: `crc32c` (the `x-amz-checksum-crc32c` header: AWS S3, MinIO, R2; computed with the CPU's CRC instructions) or `md5` (`Content-MD5`, about 20 times the CPU) for a store without the checksum headers. A body that does not match is refused by the store and retried.",
				bind: text(func(s *S3) *string { return &s.Checksum }).byDefault(ChecksumCRC32C).
					checked(oneOf("is not a checksum jetlake sends; allowed: \"crc32c\" (x-amz-checksum-crc32c), \"md5\" (Content-MD5, for stores without the checksum headers)", ChecksumCRC32C, ChecksumMD5))},
		},
		secrets: map[string]string{
			"access_key_id":     neverSecrets + "name an environment variable with access_key_id_env",
			"access_key":        neverSecrets + "name an environment variable with access_key_id_env",
			"secret_access_key": neverSecrets + "name an environment variable with secret_access_key_env",
			"secret_key":        neverSecrets + "name an environment variable with secret_access_key_env",
			"session_token":     neverSecrets + "set the AWS_SESSION_TOKEN environment variable",
		},
	})
	outputSpec = filled(spec{
		name: "output", where: "in [output]", header: "[output]",
		keys: []Key{
			{Name: "format",
				Allowed: "`json_lines` (one JSON object per line; Athena, Trino, DuckDB, Spark), `json_array` (one JSON array per file; DuckDB and Spark, **not** Athena), `raw` (the payload bytes as they are), `parquet` (columnar; see [Output: compression, Parquet and typed columns](formats.md#output-compression-parquet-and-typed-columns)).",
				bind: text(func(o *Output) *formats.Format { return &o.Format }).byDefault(formats.JSONLines).
					checked(oneOf("is not a format; allowed: json_lines, json_array, raw, parquet", formats.JSONLines, formats.JSONArray, formats.Raw, formats.Parquet))},
			{Name: "compression", Default: "`\"snappy\"` for `parquet`, `\"none\"` otherwise",
				Allowed: "`parquet`: `snappy`, `zstd`, `gzip`, `none`; the other formats: `none`, `gzip`, `zstd` (see [their extensions](formats.md#compression-of-json_lines-json_array-and-raw)).",
				bind: text(func(o *Output) *formats.Compression { return &o.Compression }).
					defaultFrom(func(o *Output, _ *Connector) formats.Compression { return compressions(o.Format)[0] }).
					noted(func(o *Output) string { return "objects end in ." + o.Ext() })},
			{Name: "path_template", Default: quoted(defaultPathTemplate),
				Allowed: "The directory of each file, below `s3.prefix`; see [Path templates](#path-templates).",
				bind: at(templateKind, func(o *Output) **pathtemplate.Template { return &o.PathTemplate }).
					defaultFrom(func(*Output, *Connector) *pathtemplate.Template { return pathtemplate.MustParse(defaultPathTemplate) }).
					checked(templatePlacement).keptWhenInvalid().shownWhen(bareObjects)},
			{Name: "group_by",
				Allowed: "`subject`: one file per subject and directory. `path`: one file per directory, with the messages of all subjects that render to it — for subjects of high cardinality.",
				bind: text(func(o *Output) *string { return &o.GroupBy }).byDefault(GroupBySubject).
					checked(oneOf("is not a grouping; allowed: subject (one file per subject and directory), path (one file per directory)", GroupBySubject, GroupByPath)).
					shownWhen(bareObjects)},
			{Name: "max_open_directories",
				Allowed: "`0` (no cap) to `10000000`: how many directories the connector writes at once when they depend on the messages (a `{column:…}` or `{header:…}` in `path_template`, or a `time_source` other than `ingest`), or how many partitions of an Iceberg table. A directory counts from its first message until `max_file_age` after its last. A message that would open one more is written under `_jetlake/rejected/` with reason `cardinality` (counted in `jetlake_messages_rejected_total`): a publisher that sends many distinct values costs rejected objects, not an object per message. Paths of the JetStream timestamp, subject and stream alone are not capped. See [Operations](operations.md#publisher-chosen-cardinality).",
				bind: integer(func(o *Output) *int { return &o.MaxOpenDirectories }).byDefault(defaultMaxOpenDirectories).
					checked(inRange(0, maxOpenDirectories, fmt.Sprintf("0 (no cap) to %d", maxOpenDirectories))).
					shownWhen(func(o *Output, c *Connector) bool { return o.UsesContent() || c.Iceberg != nil })},
			{Name: "include_metadata",
				Allowed: "Write stream, subject, sequence and timestamp with every message. Not for `raw`, which writes the payloads alone: set there, it is an error.",
				bind:    boolean(func(o *Output) *bool { return &o.IncludeMetadata }).byDefault(true)},
			{Name: "include_headers",
				Allowed: "Write the message headers too. Not for `raw` either.",
				bind:    boolean(func(o *Output) *bool { return &o.IncludeHeaders }).byDefault(false)},
			{Name: "keep_exact_payload",
				Allowed: "`json_lines` and `json_array` with `include_metadata = true` only: `true` keeps the exact bytes of JSON payloads for [`jetlake restore`](restore.md). A record whose `payload` (the JSON value, compacted) does not keep them — whitespace between tokens, or the literal `null`, which an empty payload writes too — also gets `payload_original`, their base64; payloads already compact, the common case, get nothing more. See [Restore fidelity](formats.md#restore-fidelity). An error with any other format, or with `include_metadata = false`.",
				bind: boolean(func(o *Output) *bool { return &o.KeepExactPayload }).byDefault(false).
					shownWhen(func(o *Output, _ *Connector) bool {
						return o.Format == formats.JSONLines || o.Format == formats.JSONArray
					})},
			{Name: "raw_delimiter",
				Allowed: "`raw` format only: bytes written after every message. TOML escapes work: `\"\\n\"`, `\"\\u0000\"`. An error with any other format.",
				bind: text(func(o *Output) *string { return &o.RawDelimiter }).byDefault("").
					shownWhen(func(o *Output, _ *Connector) bool { return o.Format == formats.Raw })},
			{Name: "row_group_size",
				Allowed: "`parquet` only: `1MiB`–`1GiB`, the column values of a row group before encoding and compression. An error with any other format.",
				bind: size(func(o *Output) *int64 { return &o.RowGroupSize }).byDefault(defaultRowGroupSize).
					checked(sizeRange(minRowGroupSize, maxRowGroupSize)).shownWhen(parquetOutput)},
			{Name: "keep_payload",
				Allowed: "`parquet` only: `false` drops the `payload` and `payload_base64` columns, for tables that only need the typed columns. An error with any other format.",
				bind:    boolean(func(o *Output) *bool { return &o.KeepPayload }).byDefault(true).shownWhen(parquetOutput)},
			{Name: "on_type_error",
				Allowed: "What a value of the wrong type for its typed column does. `reject`: the message is written under `_jetlake/rejected/` instead of the data files. `null`: the column is null (a path renders it as `__HIVE_DEFAULT_PARTITION__`) and the message is written.",
				bind: text(func(o *Output) *formats.TypeErrorPolicy { return &o.OnTypeError }).byDefault(formats.RejectTypeErrors).
					checked(oneOf("is not a type error policy; allowed: reject (the message goes under _jetlake/ instead of the data), null (the column is null)", formats.RejectTypeErrors, formats.NullTypeErrors)).
					shownWhen(func(o *Output, c *Connector) bool { return o.Format == formats.Parquet || len(o.Columns) > 0 })},
			{Name: "columns",
				Allowed: "Typed columns read from JSON payloads; see [`[[output.columns]]`](#outputcolumns). `parquet` writes them as columns; with every format, `{column:<name>}` in `path_template` and `time_source` read them.",
				bind: &tableList[Output, Column]{get: func(o *Output) *[]Column { return &o.Columns }, sp: &columnSpec, what: "column",
					cross: (*checker).columnCrossChecks}},
			{Name: "time_source",
				Allowed: "The time `{date}`, `{year}` … `{minute}` render: `ingest` (the JetStream timestamp), `column:<name>` (a `timestamp` or `date` column of `[[output.columns]]`: event time from the payload), `header:<Name>` (a header holding RFC 3339, or an epoch number in `time_unit`). See [Event time and partitions by content](#event-time-and-partitions-by-content).",
				bind: bind(textKind[string](), func(o *Output) string { return o.Time.Source() }, (*Output).setTimeSource).
					byDefault(TimeSourceIngest).checked(checkTimeSource).shownWhen(bareObjects)},
			{Name: "time_fallback",
				Allowed: "What a message without a usable event time does: `ingest` (its path takes the JetStream timestamp; counted in `jetlake_event_time_fallback_total`), `reject` (it goes under `_jetlake/rejected/` with the reason).",
				bind: at(fallbackKind, func(o *Output) *bool { return &o.Time.Reject }).byDefault(false).
					shownWhen(func(o *Output, c *Connector) bool { return bareObjects(o, c) && !o.Time.Ingest() })},
			{Name: "time_unit",
				Allowed: "With `time_source = \"header:<Name>\"` only: `s`, `ms`, `us` or `ns`, the unit of an epoch number in the header; without it the header must hold RFC 3339.",
				bind: text(func(o *Output) *string { return &o.Time.Unit }).
					checked(oneOf("is not a unit; allowed: s, ms, us, ns", "s", "ms", "us", "ns")).shownWhen(bareObjects)},
			{Name: "timezone",
				Allowed: "An IANA time zone name (`Europe/Berlin`): the zone the time variables of the path are rendered in. Stored values stay in UTC.",
				bind:    at(zoneKind, func(o *Output) **time.Location { return &o.Time.Location }).byDefault(nil).shownWhen(bareObjects)},
		},
	})
	columnSpec = filled(spec{
		name: "columns", where: "in [[output.columns]]", header: "[[output.columns]]",
		keys: []Key{
			{Name: "name",
				Allowed: "`[a-z_][a-z0-9_]*`; unique; not `stream`, `subject`, `sequence`, `timestamp`, `headers`, `payload`, `payload_base64` (even when that column is not written).",
				bind: text(func(c *Column) *string { return &c.Name }).
					required("missing; name the column, such as \"user_id\"").checked(checkColumnName)},
			{Name: "source",
				Allowed: "Member names separated by dots; a segment that is a non-negative integer without leading zeros (`0`, `12`) also indexes arrays; `a..b`, `.a`, `a.` are errors. Member names containing dots cannot be addressed.",
				bind: text(func(c *Column) *string { return &c.Source }).
					required("missing; give the dotted path of the payload field, such as \"user.id\" or \"items.0.sku\"").checked(checkColumnSource)},
			{Name: "type",
				Allowed: "`string`, `int64`, `int32`, `double`, `boolean`, `timestamp`, `date`, `json`.",
				bind: text(func(c *Column) *formats.ColumnType { return &c.Type }).
					required("missing; allowed: " + join(columnTypes)).checked(oneOf("is not a column type; allowed: "+join(columnTypes), columnTypes...))},
			{Name: "unit",
				Allowed: "`timestamp` only: `s`, `ms`, `us`, `ns`. **No default**: without `unit` a timestamp column takes only RFC 3339 strings and an epoch number is a type error, because guessing the unit would silently write dates centuries off.",
				bind: text(func(c *Column) *string { return &c.Unit }).
					checked(oneOf("is not a unit; allowed: s, ms, us, ns (of epoch numbers)", "s", "ms", "us", "ns"))},
			{Name: "coerce",
				Allowed: "`true` also converts some values of another JSON type, such as `\"42\"` for an `int64` column or `1.50` for a `string` one; the conversions of each type are in [Typed columns](formats.md#typed-columns-outputcolumns).",
				bind:    boolean(func(c *Column) *bool { return &c.Coerce }).byDefault(false)},
		},
	})
	stateSpec = filled(spec{
		name: "state", where: "in [state]", header: "[state]",
		keys: []Key{
			{Name: "bucket",
				Allowed: "A JetStream key-value bucket name (letters, digits, `_`, `-`); created on first use, on disk, with no TTL. Connectors may share it: keys carry the connector, stream and consumer. An existing bucket that can lose entries by itself (memory storage, a TTL, limits that drop the oldest entries) is refused: it holds the export records jetlake resumes from.",
				bind:    text(func(s *State) *string { return &s.Bucket }).byDefault(DefaultStateBucket).checked(stateBucket)},
			{Name: "replicas",
				Allowed: "`1`–`5`: replicas when the bucket is created (3 on a JetStream cluster). A bucket with fewer replicas than a stream is a warning at start and in `plan`.",
				bind:    integer(func(s *State) *int { return &s.Replicas }).byDefault(1).checked(inRange(1, 5, "1 to 5 (3 on a JetStream cluster)"))},
		},
	})
	icebergSpec = filled(spec{
		name: "iceberg", where: "in [iceberg]", header: "[iceberg]",
		keys: []Key{
			{Name: "catalog",
				Allowed: "`sql`: an embedded sqlite file or a PostgreSQL database (the Java JdbcCatalog's tables). `rest`: an Iceberg REST catalog (Polaris, Nessie, Lakekeeper, S3 Tables, R2). `glue`: the AWS Glue Data Catalog, which Athena reads.",
				bind: text(func(ib *Iceberg) *string { return &ib.Catalog }).byDefault("sql").
					checked(oneOf("is not a catalog; allowed: sql (a sqlite file or a PostgreSQL database), rest (an Iceberg REST catalog), glue (AWS Glue)", "sql", "rest", "glue")).
					keptWhenInvalid()},
			{Name: "uri", Default: "required for `sql` and `rest`",
				Allowed: "`sql`: `sqlite:///path/to/catalog.db` or `postgres://user@host:port/database?sslmode=verify-full`; a password in the URI, and the query parameters `password`, `sslpassword` and `sslkey`, are refused: set `PGPASSWORD` (or `~/.pgpass`), `PGSSLPASSWORD`, `PGSSLKEY`. A host that is not a loopback address needs `sslmode=verify-full` or `verify-ca` (the driver's default, `prefer`, checks no certificate and may fall back to plain text), unless `allow_insecure_sslmode = true`. `rest`: the catalog's `https://` URL (`http://` only to a loopback address); every request goes to this host with TLS verified, whatever the catalog's `/v1/config` answers (a `uri`, `oauth2-server-uri` or `rest.tls.skip-verify` it sends is not followed). `glue`: an endpoint other than AWS's own (a VPC endpoint), or leave it out. Credentials in the URI are refused.",
				bind: text(func(ib *Iceberg) *string { return &ib.URI }).
					showing(func(ib *Iceberg, _ *Connector) string { return RedactURL(ib.URI) })},
			{Name: "allow_insecure_sslmode",
				Allowed: "`sql` with a `postgres://` uri only: `true` allows a non-loopback host without `sslmode=verify-full`/`verify-ca`.",
				bind: boolean(func(ib *Iceberg) *bool { return &ib.AllowInsecureSSLMode }).byDefault(false).
					shownWhen(func(ib *Iceberg, _ *Connector) bool { return isPostgresURI(ib.URI) })},
			{Name: "warehouse",
				Allowed: "`rest` only: the warehouse to ask the catalog for (Polaris' catalog name, an R2 or S3 Tables warehouse).",
				bind:    text(func(ib *Iceberg) *string { return &ib.Warehouse })},
			{Name: "token_env",
				Allowed: "`rest` only: the environment variable holding a bearer token.",
				bind:    envField(func(ib *Iceberg) *string { return &ib.TokenEnv })},
			{Name: "credential_env",
				Allowed: "`rest` only: the environment variable holding an OAuth2 client credential, `client_id:client_secret`, exchanged at the catalog's `/v1/oauth/tokens`. Not with `token_env`.",
				bind:    envField(func(ib *Iceberg) *string { return &ib.CredentialEnv })},
			{Name: "sigv4_service",
				Allowed: "`rest` only: sign requests with AWS Signature V4 for this service (`s3tables`, `glue`), with the AWS credentials of the environment. Not with `token_env` or `credential_env`.",
				bind:    text(func(ib *Iceberg) *string { return &ib.SigV4Service })},
			{Name: "region", Default: "`[s3] region`",
				Allowed: "`glue`, and `rest` with `sigv4_service`: the AWS region.",
				bind: text(func(ib *Iceberg) *string { return &ib.Region }).emptyIsOmitted().checked(quotedWhy(checkRegion)).
					defaultFrom(func(_ *Iceberg, c *Connector) string { return c.S3.Region }).shownWhen(signsWithAWS)},
			{Name: "catalog_id", Default: "the caller's account",
				Allowed: "`glue` only: the 12-digit AWS account id whose catalog holds the table.",
				bind:    text(func(ib *Iceberg) *string { return &ib.CatalogID }).checked(optional(accountID)).shownWhen(signsWithAWS)},
			{Name: "namespace",
				Allowed: "Letters, digits, `_`, `-`; not `_jetlake`, the folder of loss markers and probes.",
				bind:    text(func(ib *Iceberg) *string { return &ib.Namespace }).byDefault(DefaultIcebergNamespace).checked(checkNamespace)},
			{Name: "table", Default: "the connector's name",
				Allowed: "Letters, digits, `_`, `-`. The table lives at `s3://<bucket>/<prefix>/<namespace>/<table>/`.",
				bind: text(func(ib *Iceberg) *string { return &ib.Table }).checked(tableName).checkingDefault().
					defaultFrom(func(_ *Iceberg, c *Connector) string { return c.Name })},
			{Name: "partitioning",
				Allowed: "Trino's syntax over the envelope columns `stream`, `subject`, `sequence`, `timestamp` and the typed columns of `[[output.columns]]`: a column (identity), `year`/`month`/`day(column)` of a timestamp or date, `hour(column)` of a timestamp, `bucket(column, n)` of a string, json, integer, date or timestamp, `truncate(column, width)` of a string, json or integer; `[]` for none. A typed column's value is read from the payload; a missing one goes in the `null` partition. See [Iceberg tables](iceberg.md#partitioning-by-typed-columns).",
				bind:    at(partitionsKind, func(ib *Iceberg) *[]Partition { return &ib.Partitioning }).byDefault(DefaultPartitioning)},
			{Name: "commit_interval",
				Allowed: "At least `1s`: how often the stored data files are committed, in one snapshot.",
				bind: duration(func(ib *Iceberg) *time.Duration { return &ib.CommitInterval }).byDefault(defaultIcebergCommitInterval).
					checked(tooShort(time.Second, "every commit adds a snapshot; use at least 1s, such as \"1m\""))},
			{Name: "keep_snapshots",
				Allowed: "`1`–`100000`: after a commit, snapshots beyond the newest `keep_snapshots` that are older than `snapshot_retention` are expired.",
				bind: integer(func(ib *Iceberg) *int { return &ib.KeepSnapshots }).byDefault(defaultKeepSnapshots).
					checked(inRange(1, maxKeepSnapshots, ""))},
			{Name: "compact_after", Default: "twice the finest time unit of `partitioning` (`\"2h\"` for `hour`), `\"2h\"` without one",
				Allowed: "At least `1s`: a partition whose newest row is this old is closed, and its small files are compacted; see [Iceberg tables](iceberg.md).",
				bind: duration(func(ib *Iceberg) *time.Duration { return &ib.CompactAfter }).
					defaultFrom(func(ib *Iceberg, _ *Connector) time.Duration { return defaultCompactAfter(ib.Partitioning) }).
					checked(tooShort(time.Second, "use at least 1s, such as \"2h\"; a partition still written to is compacted over and over"))},
			{Name: "snapshot_retention",
				Allowed: "How long a snapshot stays readable (time travel) before it may be expired; `\"0s\"` keeps only the newest `keep_snapshots`.",
				bind: duration(func(ib *Iceberg) *time.Duration { return &ib.SnapshotRetention }).byDefault(defaultSnapshotRetention).
					checked(notNegativeRetention)},
			{Name: "remove_orphans",
				Allowed: "`true`: `run`'s compaction passes also remove orphan data files (see [Iceberg tables](iceberg.md)); otherwise only `jetlake compact` does.",
				bind:    boolean(func(ib *Iceberg) *bool { return &ib.RemoveOrphans }).byDefault(false)},
			{Name: "orphan_age",
				Allowed: "At least `1h`: how old an orphan data file must be to be removed.",
				bind: duration(func(ib *Iceberg) *time.Duration { return &ib.OrphanAge }).byDefault(defaultOrphanAge).
					checked(tooShort(time.Hour, "use at least 1h, such as \"72h\"; a file younger than the writes, commits and compactions under way may still be named by one"))},
		},
		secrets: map[string]string{
			"token":      neverSecrets + "name the environment variable that holds it with token_env",
			"credential": neverSecrets + "name the environment variable that holds it with credential_env",
		},
	})
	rotationSpec = filled(spec{
		name: "rotation", where: "in [rotation]", header: "[rotation]",
		keys: []Key{
			{Name: "max_file_size",
				Allowed: "`1KiB`–`5GiB` (the largest object a single S3 upload stores). Bytes of encoded output.",
				bind:    size(func(r *Rotation) *int64 { return &r.MaxFileSize }).byDefault(defaultMaxFileSize).checked(sizeRange(minFileSize, maxFileSize))},
			{Name: "max_messages_per_file",
				Allowed: "`0` (no count limit) to `10000000`.",
				bind: integer(func(r *Rotation) *int { return &r.MaxMessagesPerFile }).byDefault(defaultMaxMessagesPerFile).
					checked(inRange(0, maxMessagesPerFile, fmt.Sprintf("0 (no count limit) to %d", maxMessagesPerFile)))},
			{Name: "max_file_age",
				Allowed: "More than 0, and at most half of every stream's `ack_wait`. Counted from the first message put into the file.",
				bind:    duration(func(r *Rotation) *time.Duration { return &r.MaxFileAge }).byDefault(defaultMaxFileAge).checked(moreThanZero("1m"))},
			{Name: "max_buffered_bytes",
				Allowed: "At least `max_file_size`. One memory budget for all the files the connector has open; when it is reached, the largest or oldest file is written early.",
				bind:    size(func(r *Rotation) *int64 { return &r.MaxBufferedBytes }).byDefault(defaultMaxBufferedBytes).checked(sizeMoreThanZero)},
		},
	})
	// allSpecs is every table a connector file may hold; an unknown key's
	// message suggests the first other table here that allows it.
	allSpecs = []*spec{&topSpec, &natsSpec, &streamSpec, &s3Spec, &outputSpec, &columnSpec, &rotationSpec, &stateSpec, &icebergSpec}
)
