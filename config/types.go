package config

import (
	"time"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Connector is one connector file, parsed, validated and resolved: every
// default is filled in, so the exporter never looks at raw TOML.
type Connector struct {
	File            string        // path of the file the connector was loaded from
	Name            string        // [A-Za-z0-9_-]+, unique among the loaded files; the default consumer name
	Enabled         bool          // default true; Load returns disabled connectors too
	ShutdownTimeout time.Duration // top-level shutdown_timeout, default 30s
	// ReadyUploadFailure is how long uploads may fail in a row before the
	// connector reports itself unready; top-level ready_upload_failure,
	// default 1m.
	ReadyUploadFailure time.Duration

	NATS     NATS
	Streams  []Stream
	S3       S3
	Output   Output
	Rotation Rotation
	State    State
	Iceberg  *Iceberg // nil: the connector writes bare objects
}

// State holds the settings of [state]: the JetStream key-value bucket where
// the exporter records the intents of uploads in flight.
type State struct {
	Bucket   string // default "jetlake_state"
	Replicas int    // replicas when the bucket is created; default 1
}

// NATS holds the connection settings of [nats]. Secrets are never values in
// the file: only names of files or environment variables that hold them.
type NATS struct {
	URL          string // comma-separated server URLs: nats://, tls://, ws:// or wss://
	CredsFile    string // at most one of CredsFile, NkeySeedFile, TokenEnv and User is set
	NkeySeedFile string
	TokenEnv     string // name of the environment variable holding the token
	User         string // set together with PasswordEnv
	PasswordEnv  string // name of the environment variable holding the password
	TLSCAFile    string
	TLSCertFile  string // set together with TLSKeyFile
	TLSKeyFile   string
	TLSRequired  bool // refuse a connection without TLS
	// AllowInsecureAuth allows a password or token to go in plain text to a
	// server that is not on a loopback address.
	AllowInsecureAuth bool

	JetStreamDomain    string // JetStream domain, for leaf-node setups
	JetStreamAPIPrefix string // JetStream API prefix, e.g. for imported JetStream
	InboxPrefix        string // custom inbox prefix, for tight permissions
}

// FailoverPinned runs instances as active and standbys on one consumer.
const FailoverPinned = "pinned"

// Delivery policies for a consumer jetlake creates.
const (
	DeliverAll = "all"
	DeliverNew = "new"
)

// Where a consumer keeps its state (consumer_storage).
const (
	// StorageMemory: no state on disk, so nats-server does not rewrite the
	// consumer's unacked set every 100 ms; a server restart (or a whole
	// cluster's) loses it, and jetlake rebuilds it from its export record.
	StorageMemory = "memory"
	// StorageFile: the consumer's state is written to disk, as the
	// stream's is.
	StorageFile = "file"
	// DefaultConsumerStorage is where a consumer jetlake creates keeps its
	// state when consumer_storage is not set.
	DefaultConsumerStorage = StorageMemory
)

// Stream is one [[streams]] entry: a stream and the durable consumer that
// reads it.
type Stream struct {
	Stream        string
	Subjects      []string      // consumer filter subjects, valid and not overlapping; empty means the whole stream
	Consumer      string        // durable name; defaults to the connector name
	DeliverPolicy string        // DeliverAll or DeliverNew, default DeliverAll
	AckWait       time.Duration // default 2m, at least 10s and at least twice Rotation.MaxFileAge
	MaxAckPending int           // resolved: derived from the rotation limits when the file says 0
	Line          int           // line of the [[streams]] header, for messages

	// ConsumerStorage is StorageMemory, StorageFile, or "" when the file
	// does not say: a consumer jetlake creates then keeps its state where
	// DefaultConsumerStorage says, and an existing consumer keeps its own.
	// When set, an existing consumer kept elsewhere is rebuilt from the
	// export record.
	ConsumerStorage string

	// Failover is "" (every instance pulls) or FailoverPinned: the
	// consumer gets a priority group with the pinned_client policy, one
	// instance pulls and another takes over when it stops.
	Failover string
	// PriorityTimeout is how long a pinned instance may send no pull
	// requests before another is pinned; default 30s.
	PriorityTimeout time.Duration

	// Partitions splits the stream into this many partitions with a
	// subject transform, each read by its own pinned consumer
	// (Consumer-<k>) that instances share through leases; 0 or 1 means
	// one consumer, not partitioned. More than 1 implies FailoverPinned.
	Partitions int
	// LeaseTTL is how long a partition's lease lasts unless renewed; an
	// instance that dies loses its partitions after it. Default 30s.
	LeaseTTL time.Duration
}

// MemoryConsumer reports whether a consumer jetlake creates for the entry
// keeps its state in memory.
func (s Stream) MemoryConsumer() bool {
	if s.ConsumerStorage == "" {
		return DefaultConsumerStorage == StorageMemory
	}
	return s.ConsumerStorage == StorageMemory
}

// Partitioned reports whether the entry splits its stream into partitions.
func (s Stream) Partitioned() bool { return s.Partitions > 1 }

// S3 holds the object store settings of [s3].
type S3 struct {
	Bucket             string
	Endpoint           string // URL; empty for AWS S3
	Region             string // default "us-east-1"
	Prefix             string // no leading or trailing slash; may be empty
	PathStyle          bool   // resolved: true by default when Endpoint is set
	AccessKeyIDEnv     string // names an environment variable; empty means the standard chain
	SecretAccessKeyEnv string // set together with AccessKeyIDEnv
	UploadConcurrency  int    // parallel uploads per connector, default 4

	AllowInsecureHTTP bool   // allow http:// to a host that is not a loopback address
	TLSCAFile         string // CA bundle to verify the endpoint with
	SSE               string // "", SSES3 or SSEKMS
	SSEKMSKeyID       string // with SSEKMS: the key id; empty means the bucket's default key
	StorageClass      string // e.g. STANDARD_IA; empty means the bucket's default
	Checksum          string // ChecksumCRC32C (default) or ChecksumMD5: what the store checks each upload's body against
}

// Checksums of uploads.
const (
	ChecksumCRC32C = "crc32c" // x-amz-checksum-crc32c
	ChecksumMD5    = "md5"    // Content-MD5
)

// Server-side encryption.
const (
	SSES3  = "s3"
	SSEKMS = "kms"
)

// Grouping of messages into buffers.
const (
	GroupBySubject = "subject" // one buffer per (subject, directory)
	GroupByPath    = "path"    // one buffer per directory
)

// Output holds the settings of [output].
type Output struct {
	Format          formats.Format          // formats.JSONLines (default), JSONArray, Raw or Parquet
	PathTemplate    *pathtemplate.Template  // never nil; default "{stream}/{subject}/{date}/{hour}"
	GroupBy         string                  // GroupBySubject (default) or GroupByPath
	IncludeMetadata bool                    // default true; parquet always writes the envelope columns
	IncludeHeaders  bool                    // default false
	RawDelimiter    string                  // written after every message; empty unless Format is formats.Raw
	Compression     formats.Compression     // resolved: formats.Snappy for parquet, formats.None otherwise
	RowGroupSize    int64                   // parquet only: bytes of column values per row group, default 64MiB; 0 for other formats
	KeepPayload     bool                    // parquet only: write the payload columns; default true
	OnTypeError     formats.TypeErrorPolicy // parquet only: formats.RejectTypeErrors (default) or NullTypeErrors
	Columns         []Column                // typed columns: parquet columns, in file order; with every format, what paths and event time read
	Time            EventTime               // the time paths take: ingest time by default

	// KeepExactPayload adds payload_original, the base64 of a payload's
	// bytes, to the JSON records whose compacted payload does not keep
	// them: json_lines and json_array with IncludeMetadata only; default
	// false.
	KeepExactPayload bool

	// MaxOpenDirectories caps the directories (table partitions) written
	// at once when they depend on the content (or the connector writes a
	// table); 0: no cap. Default 4096.
	MaxOpenDirectories int
}

// Column is one [[output.columns]] entry: a typed column whose values come
// from a field of each JSON payload. Parquet writes it as a column; with
// every format, {column:<name>} and time_source read it.
type Column struct {
	Name   string             // [a-z_][a-z0-9_]*, unique, not an envelope column name
	Source string             // dotted path into the payload: "user.id", "items.0.sku"
	Type   formats.ColumnType // formats.TypeString, TypeInt64, ...
	Unit   string             // timestamp only: "s", "ms", "us" or "ns" for epoch numbers; empty: RFC 3339 strings only
	Coerce bool               // also convert "42" to 42 and the like
}

// Rotation holds the settings of [rotation].
type Rotation struct {
	MaxFileSize        int64         // bytes of encoded output, 1KiB to 5GiB, default 8MiB
	MaxMessagesPerFile int           // 0 means no count limit; default 10000
	MaxFileAge         time.Duration // from the first message the exporter received into a buffer; default 1m
	MaxBufferedBytes   int64         // one budget for all buffers of the connector, at least MaxFileSize; default 256MiB
}
