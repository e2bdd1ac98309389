package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/lossmarker"
)

// Iceberg holds the settings of [iceberg]: the connector writes an Apache
// Iceberg table (format v2) through a catalog instead of bare objects. The
// table lives at <s3.bucket>/<s3.prefix>/<namespace>/<table>/.
type Iceberg struct {
	// Catalog is the kind of catalog: "sql" (an embedded sqlite file or a
	// PostgreSQL database), "rest" (an Iceberg REST catalog) or "glue"
	// (the AWS Glue Data Catalog).
	Catalog string
	// URI locates the catalog. sql: "sqlite:///path/catalog.db" or
	// "postgres://user@host:port/db"; rest: the catalog's URL; glue: an
	// endpoint other than AWS's own, or empty.
	URI string
	// Warehouse is the warehouse a REST catalog is asked for (Polaris'
	// catalog name, an R2 or S3 Tables warehouse); empty sends none.
	Warehouse string
	// TokenEnv and CredentialEnv name the environment variables that hold
	// a REST catalog's bearer token, or its OAuth2 client credential
	// ("client_id:client_secret"); at most one is set.
	TokenEnv      string
	CredentialEnv string
	// SigV4Service signs a REST catalog's requests with AWS Signature V4
	// for this service ("s3tables", "glue"), with the AWS credentials of the
	// environment; empty does not sign.
	SigV4Service string
	// Region is the AWS region of a Glue catalog or of SigV4 signing;
	// default [s3] region.
	Region string
	// CatalogID is the AWS account id of a Glue catalog; empty is the
	// caller's own.
	CatalogID string
	// AllowInsecureSSLMode lets a PostgreSQL catalog on a host that is not
	// a loopback address be reached without sslmode=verify-full or
	// verify-ca in its URI; default false.
	AllowInsecureSSLMode bool

	Namespace      string        // default "jetlake"
	Table          string        // default the connector's name
	Partitioning   []Partition   // default DefaultPartitioning
	CommitInterval time.Duration // default 1m
	// KeepSnapshots and SnapshotRetention bound the table's history: after
	// a commit, snapshots beyond the newest KeepSnapshots that are older
	// than SnapshotRetention are expired. Defaults 100 and 24h.
	KeepSnapshots     int
	SnapshotRetention time.Duration
	// CompactAfter closes a partition once its newest row is this old:
	// then its small files may be compacted. Default twice the finest time
	// unit of the partitioning (2h for hour), 2h without one.
	CompactAfter time.Duration
	// RemoveOrphans makes run's compaction passes remove orphan data
	// files too: files under the table's data folder that no snapshot,
	// intent or commit plan names, older than OrphanAge, whose metadata
	// says this connector wrote them for this table. Default false:
	// `jetlake compact` removes them when asked.
	RemoveOrphans bool
	// OrphanAge is how old an orphan must be to be removed; default 72h.
	OrphanAge time.Duration
}

// Partition is one entry of [iceberg] partitioning, in Trino's syntax: a
// column (identity), or year, month, day, hour, bucket or truncate of one.
type Partition struct {
	Column    string // stream, subject, sequence, timestamp, or a typed column of [[output.columns]]
	Transform string // "identity", "year", "month", "day", "hour", "bucket" or "truncate"
	N         int    // buckets, or truncate's width
}

// String returns the entry as it is written: "subject", "hour(timestamp)",
// "bucket(subject, 16)".
func (p Partition) String() string {
	switch p.Transform {
	case "identity":
		return p.Column
	case "bucket", "truncate":
		return p.Transform + "(" + p.Column + ", " + strconv.Itoa(p.N) + ")"
	}
	return p.Transform + "(" + p.Column + ")"
}

// DefaultPartitioning partitions a table by hour of the message time, then
// by subject.
var DefaultPartitioning = []Partition{{Column: "timestamp", Transform: "hour"}, {Column: "subject", Transform: "identity"}}

// partitionColumns are the envelope's columns a table may be partitioned
// by, known for every message before its payload is read, with their
// types. A typed column of [[output.columns]] may be partitioned by too;
// its value is read from the payload.
var partitionColumns = []struct {
	name string
	typ  formats.ColumnType
}{
	{"stream", formats.TypeString},
	{"subject", formats.TypeString},
	{"sequence", formats.TypeInt64},
	{"timestamp", formats.TypeTimestamp},
}

// envelopeColumnType returns the type of an envelope column to partition
// by, and whether name is one.
func envelopeColumnType(name string) (formats.ColumnType, bool) {
	for _, c := range partitionColumns {
		if c.name == name {
			return c.typ, true
		}
	}
	return "", false
}

// partitionColumnList lists the envelope columns to partition by.
func partitionColumnList() string {
	names := make([]string, len(partitionColumns))
	for i, c := range partitionColumns {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// TransformTakes reports whether a partition transform ("identity",
// "year", ..., "truncate") takes a column of type t, as Iceberg allows
// (the type Iceberg stores it as: json is a string): identity every type;
// year, month and day a timestamp or date; hour a timestamp; bucket a
// string, integer, date or timestamp; truncate a string or integer.
func TransformTakes(transform string, t formats.ColumnType) bool {
	switch transform {
	case "identity":
		return true
	case "year", "month", "day":
		return t == formats.TypeTimestamp || t == formats.TypeDate
	case "hour":
		return t == formats.TypeTimestamp
	case "bucket":
		return slices.Contains([]formats.ColumnType{formats.TypeString, formats.TypeJSON, formats.TypeInt64, formats.TypeInt32, formats.TypeDate, formats.TypeTimestamp}, t)
	case "truncate":
		return slices.Contains([]formats.ColumnType{formats.TypeString, formats.TypeJSON, formats.TypeInt64, formats.TypeInt32}, t)
	}
	return false
}

// transformColumns says which columns a transform takes, for messages.
var transformColumns = map[string]string{
	"year":     "a timestamp or date column",
	"month":    "a timestamp or date column",
	"day":      "a timestamp or date column",
	"hour":     "a timestamp column (not a date)",
	"bucket":   "a string, json, int64, int32, date or timestamp column",
	"truncate": "a string, json, int64 or int32 column",
}

// checkTransform returns why p's transform does not take its column of
// type t (envelope says whether it is an envelope column), or "".
func checkTransform(p Partition, t formats.ColumnType, envelope bool) string {
	if TransformTakes(p.Transform, t) {
		return ""
	}
	of := "[[output.columns]]"
	if envelope {
		of = "the envelope"
	}
	msg := fmt.Sprintf("%q: %s takes %s, and %s of %s is of type %s", p.String(), p.Transform, transformColumns[p.Transform], p.Column, of, t)
	switch t {
	case formats.TypeTimestamp:
		msg += fmt.Sprintf("; use year, month, day or hour(%s)", p.Column)
	case formats.TypeDate:
		msg += fmt.Sprintf("; use year, month or day(%s)", p.Column)
	}
	return msg
}

// ParsePartition parses one partitioning entry. A transform of an
// envelope column is checked against the column's type here; one of a
// typed column when the columns are known (CheckPartition).
func ParsePartition(s string) (Partition, error) {
	s = strings.TrimSpace(s)
	fn, args, ok := strings.Cut(s, "(")
	if !ok {
		if !isPartitionColumn(s) {
			return Partition{}, fmt.Errorf("%q is not a column to partition by; allowed: %s, a column of [[output.columns]], or a transform such as hour(timestamp)", s, partitionColumnList())
		}
		return Partition{Column: s, Transform: "identity"}, nil
	}
	args, ok = strings.CutSuffix(args, ")")
	if !ok {
		return Partition{}, fmt.Errorf("%q: missing )", s)
	}
	parts := strings.Split(args, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	p := Partition{Column: parts[0], Transform: strings.ToLower(strings.TrimSpace(fn))}
	switch p.Transform {
	case "year", "month", "day", "hour":
		if len(parts) != 1 {
			return Partition{}, fmt.Errorf("%q: %s takes one column, as %s(timestamp)", s, p.Transform, p.Transform)
		}
	case "bucket", "truncate":
		if len(parts) != 2 {
			return Partition{}, fmt.Errorf("%q: %s takes a column and a number, as %s(subject, 16)", s, p.Transform, p.Transform)
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil || n <= 0 {
			return Partition{}, fmt.Errorf("%q: %q is not a positive number", s, parts[1])
		}
		if n > math.MaxInt32 {
			return Partition{}, fmt.Errorf("%q: %d is out of range; allowed: 1 to %d", s, n, math.MaxInt32)
		}
		p.N = n
	default:
		return Partition{}, fmt.Errorf("%q: unknown transform %q; allowed: year, month, day, hour, bucket, truncate", s, fn)
	}
	if !isPartitionColumn(p.Column) {
		return Partition{}, fmt.Errorf("%q: %q is not a column to partition by; allowed: %s, or a column of [[output.columns]]", s, p.Column, partitionColumnList())
	}
	if t, ok := envelopeColumnType(p.Column); ok {
		if why := checkTransform(p, t, true); why != "" {
			return Partition{}, errors.New(why)
		}
	}
	return p, nil
}

// isPartitionColumn reports whether s may name a column to partition by:
// an envelope column, or a name a typed column may have.
func isPartitionColumn(s string) bool {
	_, ok := envelopeColumnType(s)
	return ok || columnName.MatchString(s)
}

// CheckPartition returns why p can not partition a table whose typed
// columns are cols, or "": its column is an envelope column or one of
// cols, of a type its transform takes.
func CheckPartition(p Partition, cols []Column) string {
	if t, ok := envelopeColumnType(p.Column); ok {
		return checkTransform(p, t, true)
	}
	i := slices.IndexFunc(cols, func(c Column) bool { return c.Name == p.Column })
	if i < 0 && p.Transform == "identity" {
		return fmt.Sprintf("%q names no column of [[output.columns]]; declare it there with its source and type, or partition by %s", p.Column, partitionColumnList())
	}
	if i < 0 {
		return fmt.Sprintf("%q: %s names no column of [[output.columns]]; declare it there with its source and type, or partition by %s", p.String(), p.Column, partitionColumnList())
	}
	return checkTransform(p, cols[i].Type, false)
}

// ReadsPayload reports whether the table's partitioning reads a typed
// column: then every message's payload is read for its partition.
func (ib *Iceberg) ReadsPayload() bool {
	for _, p := range ib.Partitioning {
		if _, ok := envelopeColumnType(p.Column); !ok {
			return true
		}
	}
	return false
}

// Defaults of [iceberg].
const (
	DefaultIcebergNamespace      = "jetlake"
	defaultIcebergCommitInterval = time.Minute
	defaultKeepSnapshots         = 100
	maxKeepSnapshots             = 100000
	defaultSnapshotRetention     = 24 * time.Hour
	defaultOrphanAge             = 72 * time.Hour
)

// icebergCrossChecks checks the rules of [iceberg] that relate its keys:
// the uri each kind of catalog takes, allow_insecure_sslmode for a
// PostgreSQL one only, one way to authenticate to a REST catalog, and the
// keys of one kind of catalog set for another.
func (c *checker) icebergCrossChecks(t map[string]any, p keyPath, ib *Iceberg) {
	if has(t, "allow_insecure_sslmode") && (ib.Catalog != "sql" || !isPostgresURI(ib.URI)) {
		c.report(p.key("allow_insecure_sslmode"), "has no meaning here; it is for catalog = \"sql\" with a postgres:// uri")
	}
	switch ib.Catalog {
	case "sql":
		c.sqlCatalogURI(t, p, ib.URI, ib.AllowInsecureSSLMode)
	case "rest":
		c.restCatalogURI(t, p, ib.URI)
	case "glue":
		if ib.URI != "" {
			c.catalogURL(p, ib.URI, "Glue signs its requests with the AWS credentials of the environment")
		}
	}
	if ib.TokenEnv != "" && ib.CredentialEnv != "" {
		c.report(p.key("credential_env"), "is set with token_env; a REST catalog takes a bearer token or a client credential, not both")
	}
	if ib.SigV4Service != "" && (ib.TokenEnv != "" || ib.CredentialEnv != "") {
		c.report(p.key("sigv4_service"), "is set with token_env or credential_env; SigV4 signs with the AWS credentials of the environment instead")
	}
	for _, key := range []string{"warehouse", "token_env", "credential_env", "sigv4_service", "catalog_id"} {
		only := "rest"
		if key == "catalog_id" {
			only = "glue"
		}
		if nonEmpty(t, key) && ib.Catalog != only {
			c.report(p.key(key), "has no meaning with catalog = %q; it is for catalog = %q", ib.Catalog, only)
		}
	}
	if nonEmpty(t, "region") && !signsWithAWS(ib, nil) {
		c.report(p.key("region"), "has no meaning with catalog = %q; it is for catalog = \"glue\", or \"rest\" with sigv4_service", ib.Catalog)
	}
}

// signsWithAWS reports whether the catalog's requests are signed with AWS
// credentials: where region and catalog_id apply.
func signsWithAWS(ib *Iceberg, _ *Connector) bool {
	return ib.Catalog == "glue" || (ib.Catalog == "rest" && ib.SigV4Service != "")
}

// accountID checks an AWS account id.
func accountID(id string) string {
	if len(id) != 12 || !isDigits(id) {
		return fmt.Sprintf("%q is not an AWS account id (12 digits)", id)
	}
	return ""
}

// tableName checks the name of a table or namespace.
func tableName(v string) string {
	if why := checkToken(v); why != "" || v == "" {
		return fmt.Sprintf("%q is not a name; allowed: letters, digits, '_' and '-'", v)
	}
	return ""
}

// checkNamespace checks the namespace of the table: a name, and not the
// folder of loss markers.
func checkNamespace(v string) string {
	if why := tableName(v); why != "" {
		return why
	}
	if v == lossmarker.Dir {
		return fmt.Sprintf("%q is the folder jetlake keeps its loss markers and probes in, under [s3] prefix: a table there would mix with them (a table \"lost\" would sweep the loss markers); choose another namespace, such as %q", v, DefaultIcebergNamespace)
	}
	return ""
}

// partitionsKind reads partitioning: an array of strings, of which it
// keeps the entries that parse, reporting each other one.
var partitionsKind = kind[[]Partition]{
	name: stringsKind.name,
	decode: func(c *checker, p keyPath, v any) ([]Partition, bool) {
		list, ok := stringsKind.decode(c, p, v)
		if !ok {
			return nil, false
		}
		var parts []Partition
		seen := map[string]bool{}
		for _, s := range list {
			part, err := ParsePartition(s)
			if err != nil {
				c.report(p, "%v", err)
				continue
			}
			if seen[part.String()] {
				c.report(p, "%q is there twice", part.String())
			}
			seen[part.String()] = true
			parts = append(parts, part)
		}
		return parts, true
	},
	encode: func(parts []Partition) string {
		list := make([]string, len(parts))
		for i, part := range parts {
			list[i] = part.String()
		}
		return stringsKind.encode(list)
	},
}

// notNegativeRetention is the check of snapshot_retention.
func notNegativeRetention(d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("%s is negative; use 0s to keep only the newest keep_snapshots", d)
	}
	return ""
}

// icebergOutputCrossChecks checks what [iceberg] asks of [output], the
// table t: parquet, none of the keys that place bare objects, and every
// partition column an envelope column or a typed column of a type its
// transform takes.
func (c *checker) icebergOutputCrossChecks(out Output, t map[string]any, ib *Iceberg) {
	for _, p := range ib.Partitioning {
		if why := CheckPartition(p, out.Columns); why != "" {
			c.report(keyPath{}.key("iceberg").key("partitioning"), "%s", why)
		}
	}
	key := keyPath{}.key("output")
	if c.ok(key.key("format")) && out.Format != formats.Parquet {
		c.report(key.key("format"), "%q can not go in an Iceberg table; use \"parquet\" with [iceberg]", out.Format)
	}
	if has(t, "path_template") {
		c.report(key.key("path_template"), "has no meaning with [iceberg]: the table's partitioning names the folders of its data files; remove path_template")
	}
	if has(t, "group_by") {
		c.report(key.key("group_by"), "has no meaning with [iceberg]: a data file holds one partition; remove group_by")
	}
	for _, k := range []string{"time_source", "time_fallback", "time_unit", "timezone"} {
		if has(t, k) {
			c.report(key.key(k), "has no meaning with [iceberg]: the table's partitioning names its folders; partition by a typed column instead, such as day(created_at) in [iceberg] partitioning; remove %s", k)
		}
	}
}

// sqlCatalogURI checks the uri of a SQL catalog.
func (c *checker) sqlCatalogURI(t map[string]any, p keyPath, uri string, allowInsecureSSLMode bool) {
	switch {
	case !has(t, "uri"):
		c.report(p.key("uri"), "missing; name the catalog, such as \"sqlite:///var/lib/jetlake/catalog.db\" or \"postgres://jetlake@db:5432/lake?sslmode=verify-full\"")
	case strings.HasPrefix(uri, "sqlite://") && len(uri) > len("sqlite://"):
	case isPostgresURI(uri):
		c.postgresURI(p, uri, allowInsecureSSLMode)
	default:
		c.report(p.key("uri"), "%q is not a catalog location; allowed: sqlite:///path/to/catalog.db, postgres://user@host:port/database", RedactURL(uri))
	}
}

// restCatalogURI checks the uri of a REST catalog.
func (c *checker) restCatalogURI(t map[string]any, p keyPath, uri string) {
	if !has(t, "uri") {
		c.report(p.key("uri"), "missing; name the REST catalog's URL, such as \"https://catalog.example.com/api/catalog\"")
		return
	}
	c.catalogURL(p, uri, "use token_env or credential_env")
}

// catalogURL checks a catalog's http(s) URL: no credentials in it, and
// plain HTTP only to a loopback address.
func (c *checker) catalogURL(p keyPath, uri, credentials string) {
	u, err := url.Parse(uri)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		c.report(p.key("uri"), "%q is not an http:// or https:// URL", RedactURL(uri))
	case u.User != nil:
		c.report(p.key("uri"), "%q holds credentials: "+neverSecrets+"%s", RedactURL(uri), credentials)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		c.report(p.key("uri"), "%q has a query or fragment: the catalog client would send it with every request, and errors would show it; remove it (%s)", RedactURL(uri), credentials)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		c.report(p.key("uri"), "%q is plain HTTP to a host that is not a loopback address: tokens and table metadata would cross the network unencrypted; use https://", RedactURL(uri))
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// defaultCompactAfter is twice the finest time unit of partitioning: a
// partition of an hour is closed two hours after its last row.
func defaultCompactAfter(partitioning []Partition) time.Duration {
	d := time.Duration(0)
	for _, p := range partitioning {
		var unit time.Duration
		switch p.Transform {
		case "hour":
			unit = time.Hour
		case "day":
			unit = 24 * time.Hour
		case "month":
			unit = 31 * 24 * time.Hour
		case "year":
			unit = 366 * 24 * time.Hour
		default:
			continue
		}
		if d == 0 || unit < d {
			d = unit
		}
	}
	if d == 0 {
		d = time.Hour
	}
	return 2 * d
}
