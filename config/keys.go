package config

import (
	"slices"
	"strconv"
	"strings"
	"time"
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
type Key struct {
	// Name is the key as a file writes it.
	Name string
	// Type is the TOML type the key takes: string, boolean, integer,
	// duration, size, array of strings, table or array of tables.
	Type string
	// Default is what applies when the key is absent, in markdown:
	// "required", "none", or the value as a file would write it.
	Default string
	// Allowed is what the key allows and does, in markdown.
	Allowed string
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

// The defaults of the rows, written as a file writes them, from the
// constants the checker fills in.

// quoted is a string value in a code span: `"us-east-1"`.
func quoted(s string) string { return "`\"" + s + "\"`" }

// durationValue is a duration as a file writes it: `"2m"`.
func durationValue(d time.Duration) string { return quoted(FormatDuration(d)) }

// sizeValue is a size as a file writes it: `"8MiB"`.
func sizeValue(n int64) string { return quoted(FormatSize(n)) }

// intValue is an integer in a code span: `4`.
func intValue(n int) string { return "`" + strconv.Itoa(n) + "`" }

const neverSecrets = "secrets are never read from the file; "

var (
	topSpec = spec{
		where: "at the top level",
		keys: []Key{
			{Name: "name", Type: "string", Default: "required",
				Allowed: "1–255 of `A-Z a-z 0-9 _ -`. Unique among the files of a directory. Used in logs and as the default consumer name."},
			{Name: "enabled", Type: "boolean", Default: "`true`",
				Allowed: "A disabled connector is loaded and validated, but not run."},
			{Name: "shutdown_timeout", Type: "duration", Default: durationValue(defaultShutdownTimeout),
				Allowed: "More than 0. How long a stopping connector may take to upload what it holds."},
			{Name: "ready_upload_failure", Type: "duration", Default: durationValue(defaultReadyUploadFailure),
				Allowed: "More than 0. How long uploads may fail in a row before `/readyz` reports the connector unready."},
			{Name: "nats", Type: "table", Default: "required",
				Allowed: "The NATS server to read from: [`[nats]`](#nats)."},
			{Name: "streams", Type: "array of tables", Default: "required",
				Allowed: "The streams to export, at least one: [`[[streams]]`](#streams)."},
			{Name: "s3", Type: "table", Default: "required",
				Allowed: "The bucket to write to: [`[s3]`](#s3)."},
			{Name: "output", Type: "table", Default: "the defaults of its keys",
				Allowed: "The format and the layout of the objects: [`[output]`](#output)."},
			{Name: "rotation", Type: "table", Default: "the defaults of its keys",
				Allowed: "When a file is closed and uploaded: [`[rotation]`](#rotation)."},
			{Name: "state", Type: "table", Default: "the defaults of its keys",
				Allowed: "Where the intents of uploads in flight are recorded: [`[state]`](#state)."},
			{Name: "iceberg", Type: "table", Default: "none (bare objects)",
				Allowed: "An Apache Iceberg table to write instead of bare objects: [`[iceberg]`](#iceberg)."},
		},
	}
	natsSpec = spec{
		name: "nats", where: "in [nats]", header: "[nats]",
		keys: []Key{
			{Name: "url", Type: "string", Default: "required",
				Allowed: "One or more server URLs separated by commas, each `scheme://host[:port]` with scheme `nats`, `tls`, `ws` or `wss`. No user or password in the URL. jetlake connects only to these: servers a cluster advertises are not dialled, so credentials never go to a host the file does not name (list every seed you want used)."},
			{Name: "creds_file", Type: "string", Default: "none",
				Allowed: "Path of a `.creds` file (JWT and nkey seed)."},
			{Name: "nkey_seed_file", Type: "string", Default: "none",
				Allowed: "Path of a file holding an nkey seed."},
			{Name: "token_env", Type: "string", Default: "none",
				Allowed: "Name of the environment variable that holds the token."},
			{Name: "user", Type: "string", Default: "none",
				Allowed: "User name; requires `password_env`."},
			{Name: "password_env", Type: "string", Default: "none",
				Allowed: "Name of the environment variable that holds the password; requires `user`."},
			{Name: "allow_insecure_auth", Type: "boolean", Default: "`false`",
				Allowed: "A password or token is refused over plain text (a `nats://` or `ws://` URL without `tls_required`, `tls_ca_file` or `tls_cert_file`) to a host that is not a loopback address, unless this is `true`: it would cross the network unencrypted. Creds and nkey files sign a challenge and send no secret."},
			{Name: "tls_ca_file", Type: "string", Default: "none",
				Allowed: "CA certificate(s) to verify the server with. Setting it turns TLS on, whatever the URL's scheme: a server that offers no TLS is refused (\"secure connection not available\"), never used in plain text."},
			{Name: "tls_cert_file", Type: "string", Default: "none",
				Allowed: "Client certificate; requires `tls_key_file`. Like `tls_ca_file`, it turns TLS on."},
			{Name: "tls_key_file", Type: "string", Default: "none",
				Allowed: "Client private key; requires `tls_cert_file`."},
			{Name: "tls_required", Type: "boolean", Default: "`false`",
				Allowed: "Refuse to talk to a server without TLS."},
			{Name: "jetstream_domain", Type: "string", Default: "none",
				Allowed: "JetStream domain (leaf-node setups); letters, digits, `_`, `-`. Not with `jetstream_api_prefix`."},
			{Name: "jetstream_api_prefix", Type: "string", Default: "none",
				Allowed: "JetStream API prefix, e.g. for a JetStream imported from another account (`\"$JS.hub.API\"`)."},
			{Name: "inbox_prefix", Type: "string", Default: "`_INBOX`",
				Allowed: "Inbox prefix for replies, for accounts whose permissions allow only a specific one (`\"_INBOX_jetlake\"`)."},
		},
		secrets: map[string]string{
			"password":  neverSecrets + "name an environment variable with password_env",
			"token":     neverSecrets + "name an environment variable with token_env",
			"nkey_seed": neverSecrets + "name the seed file with nkey_seed_file",
			"seed":      neverSecrets + "name the seed file with nkey_seed_file",
		},
	}
	streamSpec = spec{
		name: "streams", where: "in [[streams]]", header: "[[streams]]",
		keys: []Key{
			{Name: "stream", Type: "string", Default: "required",
				Allowed: "A JetStream stream name: no whitespace, control characters, `.`, `*`, `>`, `/` or `\\`; at most 255 bytes."},
			{Name: "subjects", Type: "array of strings", Default: "`[]` (the whole stream)",
				Allowed: "Consumer filter subjects: tokens separated by `.`, none empty, no whitespace; `*` and `>` are whole tokens and `>` only the last. No duplicates, and no two that overlap (`events.>` and `events.a`)."},
			{Name: "consumer", Type: "string", Default: "the connector's `name`",
				Allowed: "Durable consumer name, same rules as `stream`. Each (stream, consumer) pair appears once per file."},
			{Name: "deliver_policy", Type: "string", Default: quoted(DeliverAll),
				Allowed: "`all` (start from the first message in the stream) or `new` (start from messages published after the consumer is created). Only where a connector without an export record starts: a consumer created again later delivers from the first sequence the record lacks."},
			{Name: "consumer_storage", Type: "string", Default: quoted(DefaultConsumerStorage) + " for a consumer jetlake creates; an existing consumer keeps its own",
				Allowed: "`memory`: nats-server keeps the consumer's state in memory and does not rewrite its unacked set to disk every 100 ms; after a server restart (or a whole R3 cluster's) the consumer starts empty or is gone, and jetlake rebuilds it from its export record. `file`: on disk. Set, it also applies to an existing consumer kept otherwise: jetlake deletes it and creates it again there from the export record, with one log line."},
			{Name: "ack_wait", Type: "duration", Default: durationValue(defaultAckWait),
				Allowed: "At least `10s`, and at least twice `rotation.max_file_age` (see below)."},
			{Name: "max_ack_pending", Type: "integer", Default: "`0` (derived)",
				Allowed: "`0` derives it from the rotation limits (see below); otherwise at least 1. A value below `rotation.max_messages_per_file` is allowed: files are then cut when the held messages near the limit (rotation reason `pending`). Negative is an error."},
			{Name: "failover", Type: "string", Default: "none",
				Allowed: "`pinned`: active/standby instances on this consumer through a priority group with the `pinned_client` policy; see [Running more than one](operations.md#running-more-than-one)."},
			{Name: "priority_timeout", Type: "duration", Default: durationValue(defaultPriorityTimeout),
				Allowed: "With `failover = \"pinned\"`: how long the pinned instance may send no pull request before another is pinned. At least `5s`."},
			{Name: "partitions", Type: "integer", Default: "`1`",
				Allowed: "`1` (not partitioned) to `1024`: split the stream into this many partitions that instances share; implies `failover = \"pinned\"`. See [Running more than one](operations.md#running-more-than-one)."},
			{Name: "lease_ttl", Type: "duration", Default: durationValue(defaultLeaseTTL),
				Allowed: "With `partitions`: how long a partition's lease lasts unless renewed (every third of it). At least `2s`."},
		},
	}
	s3Spec = spec{
		name: "s3", where: "in [s3]", header: "[s3]",
		keys: []Key{
			{Name: "bucket", Type: "string", Default: "required",
				Allowed: "3–63 lowercase letters, digits, `.` and `-`, starting and ending with a letter or digit; no `..`, `.-` or `-.`; not an IP address. The bucket must exist."},
			{Name: "endpoint", Type: "string", Default: "none (AWS S3)",
				Allowed: "`http://` or `https://` URL with a host and no path, query or credentials, e.g. `\"http://127.0.0.1:9000\"` for MinIO."},
			{Name: "region", Type: "string", Default: quoted(defaultRegion),
				Allowed: "Letters, digits, `-` and `_`."},
			{Name: "prefix", Type: "string", Default: "`\"\"`",
				Allowed: "Key prefix of every object. Valid UTF-8; no leading or trailing `/`; no empty (`//`), `.` or `..` segments; no control characters or `\\`."},
			{Name: "path_style", Type: "boolean", Default: "`true` when `endpoint` is set, else `false`",
				Allowed: "Path-style requests (`https://host/bucket/key`) instead of virtual-hosted ones (`https://bucket.host/key`)."},
			{Name: "access_key_id_env", Type: "string", Default: "none",
				Allowed: "Name of the environment variable that holds the access key id. Set together with `secret_access_key_env`."},
			{Name: "secret_access_key_env", Type: "string", Default: "none",
				Allowed: "Name of the environment variable that holds the secret access key. Set together with `access_key_id_env`."},
			{Name: "upload_concurrency", Type: "integer", Default: intValue(defaultUploadConcurrency),
				Allowed: "`1`–`64`: uploads of objects over 1 MiB in flight at once for this connector; smaller objects (a request each, whose cost is the store's per request) may have up to four times as many in flight in all, within `max_buffered_bytes`. The files of one buffer (one subject, or one path with `group_by = \"path\"`) are uploaded one after the other, in the order they were cut; other buffers' files go ahead meanwhile."},
			{Name: "allow_insecure_http", Type: "boolean", Default: "`false`",
				Allowed: "An `http://` endpoint is refused unless its host is a loopback address (`127.0.0.1`, `::1`, `localhost`) or this is `true`: credentials and data would cross the network unencrypted."},
			{Name: "tls_ca_file", Type: "string", Default: "none",
				Allowed: "PEM CA bundle to verify an `https://` endpoint with (a private CA); an Iceberg connector's table files are read and written with it too."},
			{Name: "sse", Type: "string", Default: "none",
				Allowed: "Server-side encryption: `s3` (SSE-S3) or `kms` (SSE-KMS)."},
			{Name: "sse_kms_key_id", Type: "string", Default: "the bucket's default key",
				Allowed: "With `sse = \"kms\"`: the KMS key id or ARN."},
			{Name: "storage_class", Type: "string", Default: "the bucket's default",
				Allowed: "e.g. `STANDARD_IA`, `INTELLIGENT_TIERING`."},
			{Name: "checksum", Type: "string", Default: quoted(ChecksumCRC32C),
				Allowed: "What the store checks every upload's body against: `crc32c` (the `x-amz-checksum-crc32c` header: AWS S3, MinIO, R2; computed with the CPU's CRC instructions) or `md5` (`Content-MD5`, about 20 times the CPU) for a store without the checksum headers. A body that does not match is refused by the store and retried."},
		},
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
		keys: []Key{
			{Name: "format", Type: "string", Default: "`\"json_lines\"`",
				Allowed: "`json_lines` (one JSON object per line; Athena, Trino, DuckDB, Spark), `json_array` (one JSON array per file; DuckDB and Spark, **not** Athena), `raw` (the payload bytes as they are), `parquet` (columnar; see [Output: compression, Parquet and typed columns](formats.md#output-compression-parquet-and-typed-columns))."},
			{Name: "compression", Type: "string", Default: "`\"snappy\"` for `parquet`, `\"none\"` otherwise",
				Allowed: "`parquet`: `snappy`, `zstd`, `gzip`, `none`; the other formats: `none`, `gzip`, `zstd` (see [their extensions](formats.md#compression-of-json_lines-json_array-and-raw))."},
			{Name: "path_template", Type: "string", Default: quoted(defaultPathTemplate),
				Allowed: "The directory of each file, below `s3.prefix`; see [Path templates](#path-templates)."},
			{Name: "group_by", Type: "string", Default: quoted(GroupBySubject),
				Allowed: "`subject`: one file per subject and directory. `path`: one file per directory, with the messages of all subjects that render to it — for subjects of high cardinality."},
			{Name: "max_open_directories", Type: "integer", Default: intValue(defaultMaxOpenDirectories),
				Allowed: "`0` (no cap) to `10000000`: how many directories the connector writes at once when they depend on the messages (a `{column:…}` or `{header:…}` in `path_template`, or a `time_source` other than `ingest`), or how many partitions of an Iceberg table. A directory counts from its first message until `max_file_age` after its last. A message that would open one more is written under `_jetlake/rejected/` with reason `cardinality` (counted in `jetlake_messages_rejected_total`): a publisher that sends many distinct values costs rejected objects, not an object per message. Paths of the JetStream timestamp, subject and stream alone are not capped. See [Operations](operations.md#publisher-chosen-cardinality)."},
			{Name: "include_metadata", Type: "boolean", Default: "`true`",
				Allowed: "Write stream, subject, sequence and timestamp with every message. Not for `raw`, which writes the payloads alone: set there, it is an error."},
			{Name: "include_headers", Type: "boolean", Default: "`false`",
				Allowed: "Write the message headers too. Not for `raw` either."},
			{Name: "keep_exact_payload", Type: "boolean", Default: "`false`",
				Allowed: "`json_lines` and `json_array` with `include_metadata = true` only: `true` keeps the exact bytes of JSON payloads for [`jetlake restore`](restore.md). A record whose `payload` (the JSON value, compacted) does not keep them — whitespace between tokens, or the literal `null`, which an empty payload writes too — also gets `payload_original`, their base64; payloads already compact, the common case, get nothing more. See [Restore fidelity](formats.md#restore-fidelity). An error with any other format, or with `include_metadata = false`."},
			{Name: "raw_delimiter", Type: "string", Default: "`\"\"`",
				Allowed: "`raw` format only: bytes written after every message. TOML escapes work: `\"\\n\"`, `\"\\u0000\"`. An error with any other format."},
			{Name: "row_group_size", Type: "size", Default: sizeValue(defaultRowGroupSize),
				Allowed: "`parquet` only: `1MiB`–`1GiB`, the column values of a row group before encoding and compression. An error with any other format."},
			{Name: "keep_payload", Type: "boolean", Default: "`true`",
				Allowed: "`parquet` only: `false` drops the `payload` and `payload_base64` columns, for tables that only need the typed columns. An error with any other format."},
			{Name: "on_type_error", Type: "string", Default: "`\"reject\"`",
				Allowed: "What a value of the wrong type for its typed column does. `reject`: the message is written under `_jetlake/rejected/` instead of the data files. `null`: the column is null (a path renders it as `__HIVE_DEFAULT_PARTITION__`) and the message is written."},
			{Name: "columns", Type: "array of tables", Default: "none",
				Allowed: "Typed columns read from JSON payloads; see [`[[output.columns]]`](#outputcolumns). `parquet` writes them as columns; with every format, `{column:<name>}` in `path_template` and `time_source` read them."},
			{Name: "time_source", Type: "string", Default: quoted(TimeSourceIngest),
				Allowed: "The time `{date}`, `{year}` … `{minute}` render: `ingest` (the JetStream timestamp), `column:<name>` (a `timestamp` or `date` column of `[[output.columns]]`: event time from the payload), `header:<Name>` (a header holding RFC 3339, or an epoch number in `time_unit`). See [Event time and partitions by content](#event-time-and-partitions-by-content)."},
			{Name: "time_fallback", Type: "string", Default: quoted(TimeFallbackIngest),
				Allowed: "What a message without a usable event time does: `ingest` (its path takes the JetStream timestamp; counted in `jetlake_event_time_fallback_total`), `reject` (it goes under `_jetlake/rejected/` with the reason)."},
			{Name: "time_unit", Type: "string", Default: "none",
				Allowed: "With `time_source = \"header:<Name>\"` only: `s`, `ms`, `us` or `ns`, the unit of an epoch number in the header; without it the header must hold RFC 3339."},
			{Name: "timezone", Type: "string", Default: quoted("UTC"),
				Allowed: "An IANA time zone name (`Europe/Berlin`): the zone the time variables of the path are rendered in. Stored values stay in UTC."},
		},
	}
	columnSpec = spec{
		name: "columns", where: "in [[output.columns]]", header: "[[output.columns]]",
		keys: []Key{
			{Name: "name", Type: "string", Default: "required",
				Allowed: "`[a-z_][a-z0-9_]*`; unique; not `stream`, `subject`, `sequence`, `timestamp`, `headers`, `payload`, `payload_base64` (even when that column is not written)."},
			{Name: "source", Type: "string", Default: "required",
				Allowed: "Member names separated by dots; a segment that is a non-negative integer without leading zeros (`0`, `12`) also indexes arrays; `a..b`, `.a`, `a.` are errors. Member names containing dots cannot be addressed."},
			{Name: "type", Type: "string", Default: "required",
				Allowed: "`string`, `int64`, `int32`, `double`, `boolean`, `timestamp`, `date`, `json`."},
			{Name: "unit", Type: "string", Default: "none",
				Allowed: "`timestamp` only: `s`, `ms`, `us`, `ns`. **No default**: without `unit` a timestamp column takes only RFC 3339 strings and an epoch number is a type error, because guessing the unit would silently write dates centuries off."},
			{Name: "coerce", Type: "boolean", Default: "`false`",
				Allowed: "`true` also converts some values of another JSON type, such as `\"42\"` for an `int64` column or `1.50` for a `string` one; the conversions of each type are in [Typed columns](formats.md#typed-columns-outputcolumns)."},
		},
	}
	stateSpec = spec{
		name: "state", where: "in [state]", header: "[state]",
		keys: []Key{
			{Name: "bucket", Type: "string", Default: quoted(DefaultStateBucket),
				Allowed: "A JetStream key-value bucket name (letters, digits, `_`, `-`); created on first use, on disk, with no TTL. Connectors may share it: keys carry the connector, stream and consumer. An existing bucket that can lose entries by itself (memory storage, a TTL, limits that drop the oldest entries) is refused: it holds the export records jetlake resumes from."},
			{Name: "replicas", Type: "integer", Default: "`1`",
				Allowed: "`1`–`5`: replicas when the bucket is created (3 on a JetStream cluster). A bucket with fewer replicas than a stream is a warning at start and in `plan`."},
		},
	}
	icebergSpec = spec{
		name: "iceberg", where: "in [iceberg]", header: "[iceberg]",
		keys: []Key{
			{Name: "catalog", Type: "string", Default: "`\"sql\"`",
				Allowed: "`sql`: an embedded sqlite file or a PostgreSQL database (the Java JdbcCatalog's tables). `rest`: an Iceberg REST catalog (Polaris, Nessie, Lakekeeper, S3 Tables, R2). `glue`: the AWS Glue Data Catalog, which Athena reads."},
			{Name: "uri", Type: "string", Default: "required for `sql` and `rest`",
				Allowed: "`sql`: `sqlite:///path/to/catalog.db` or `postgres://user@host:port/database?sslmode=verify-full`; a password in the URI, and the query parameters `password`, `sslpassword` and `sslkey`, are refused: set `PGPASSWORD` (or `~/.pgpass`), `PGSSLPASSWORD`, `PGSSLKEY`. A host that is not a loopback address needs `sslmode=verify-full` or `verify-ca` (the driver's default, `prefer`, checks no certificate and may fall back to plain text), unless `allow_insecure_sslmode = true`. `rest`: the catalog's `https://` URL (`http://` only to a loopback address); every request goes to this host with TLS verified, whatever the catalog's `/v1/config` answers (a `uri`, `oauth2-server-uri` or `rest.tls.skip-verify` it sends is not followed). `glue`: an endpoint other than AWS's own (a VPC endpoint), or leave it out. Credentials in the URI are refused."},
			{Name: "allow_insecure_sslmode", Type: "boolean", Default: "`false`",
				Allowed: "`sql` with a `postgres://` uri only: `true` allows a non-loopback host without `sslmode=verify-full`/`verify-ca`."},
			{Name: "warehouse", Type: "string", Default: "none",
				Allowed: "`rest` only: the warehouse to ask the catalog for (Polaris' catalog name, an R2 or S3 Tables warehouse)."},
			{Name: "token_env", Type: "string", Default: "none",
				Allowed: "`rest` only: the environment variable holding a bearer token."},
			{Name: "credential_env", Type: "string", Default: "none",
				Allowed: "`rest` only: the environment variable holding an OAuth2 client credential, `client_id:client_secret`, exchanged at the catalog's `/v1/oauth/tokens`. Not with `token_env`."},
			{Name: "sigv4_service", Type: "string", Default: "none",
				Allowed: "`rest` only: sign requests with AWS Signature V4 for this service (`s3tables`, `glue`), with the AWS credentials of the environment. Not with `token_env` or `credential_env`."},
			{Name: "region", Type: "string", Default: "`[s3] region`",
				Allowed: "`glue`, and `rest` with `sigv4_service`: the AWS region."},
			{Name: "catalog_id", Type: "string", Default: "the caller's account",
				Allowed: "`glue` only: the 12-digit AWS account id whose catalog holds the table."},
			{Name: "namespace", Type: "string", Default: quoted(DefaultIcebergNamespace),
				Allowed: "Letters, digits, `_`, `-`; not `_jetlake`, the folder of loss markers and probes."},
			{Name: "table", Type: "string", Default: "the connector's name",
				Allowed: "Letters, digits, `_`, `-`. The table lives at `s3://<bucket>/<prefix>/<namespace>/<table>/`."},
			{Name: "partitioning", Type: "array of strings", Default: "`[\"hour(timestamp)\", \"subject\"]`",
				Allowed: "Trino's syntax over the envelope columns `stream`, `subject`, `sequence`, `timestamp` and the typed columns of `[[output.columns]]`: a column (identity), `year`/`month`/`day(column)` of a timestamp or date, `hour(column)` of a timestamp, `bucket(column, n)` of a string, json, integer, date or timestamp, `truncate(column, width)` of a string, json or integer; `[]` for none. A typed column's value is read from the payload; a missing one goes in the `null` partition. See [Iceberg tables](iceberg.md#partitioning-by-typed-columns)."},
			{Name: "commit_interval", Type: "duration", Default: durationValue(defaultIcebergCommitInterval),
				Allowed: "At least `1s`: how often the stored data files are committed, in one snapshot."},
			{Name: "keep_snapshots", Type: "integer", Default: intValue(defaultKeepSnapshots),
				Allowed: "`1`–`100000`: after a commit, snapshots beyond the newest `keep_snapshots` that are older than `snapshot_retention` are expired."},
			{Name: "compact_after", Type: "duration", Default: "twice the finest time unit of `partitioning` (`\"2h\"` for `hour`), `\"2h\"` without one",
				Allowed: "At least `1s`: a partition whose newest row is this old is closed, and its small files are compacted; see [Iceberg tables](iceberg.md)."},
			{Name: "snapshot_retention", Type: "duration", Default: durationValue(defaultSnapshotRetention),
				Allowed: "How long a snapshot stays readable (time travel) before it may be expired; `\"0s\"` keeps only the newest `keep_snapshots`."},
			{Name: "remove_orphans", Type: "boolean", Default: "`false`",
				Allowed: "`true`: `run`'s compaction passes also remove orphan data files (see [Iceberg tables](iceberg.md)); otherwise only `jetlake compact` does."},
			{Name: "orphan_age", Type: "duration", Default: durationValue(defaultOrphanAge),
				Allowed: "At least `1h`: how old an orphan data file must be to be removed."},
		},
		secrets: map[string]string{
			"token":      neverSecrets + "name the environment variable that holds it with token_env",
			"credential": neverSecrets + "name the environment variable that holds it with credential_env",
		},
	}
	rotationSpec = spec{
		name: "rotation", where: "in [rotation]", header: "[rotation]",
		keys: []Key{
			{Name: "max_file_size", Type: "size", Default: sizeValue(defaultMaxFileSize),
				Allowed: "`1KiB`–`5GiB` (the largest object a single S3 upload stores). Bytes of encoded output."},
			{Name: "max_messages_per_file", Type: "integer", Default: intValue(defaultMaxMessagesPerFile),
				Allowed: "`0` (no count limit) to `10000000`."},
			{Name: "max_file_age", Type: "duration", Default: durationValue(defaultMaxFileAge),
				Allowed: "More than 0, and at most half of every stream's `ack_wait`. Counted from the first message put into the file."},
			{Name: "max_buffered_bytes", Type: "size", Default: sizeValue(defaultMaxBufferedBytes),
				Allowed: "At least `max_file_size`. One memory budget for all the files the connector has open; when it is reached, the largest or oldest file is written early."},
		},
	}
	// allSpecs is every table a connector file may hold; an unknown key's
	// message suggests the first other table here that allows it.
	allSpecs = []*spec{&topSpec, &natsSpec, &streamSpec, &s3Spec, &outputSpec, &columnSpec, &rotationSpec, &stateSpec, &icebergSpec}
)
