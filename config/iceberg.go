package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jetlake/jetlake/formats"
)

// Iceberg holds the settings of [iceberg]: the connector writes an Apache
// Iceberg table (format v2) through a catalog instead of bare objects. The
// table lives at <s3.bucket>/<s3.prefix>/<namespace>/<table>/.
type Iceberg struct {
	Catalog        string        // "sql": an embedded sqlite file or a PostgreSQL database
	URI            string        // "sqlite:///path/catalog.db" or "postgres://user@host:port/db"
	Namespace      string        // default "jetlake"
	Table          string        // default the connector's name
	Partitioning   []Partition   // default DefaultPartitioning
	CommitInterval time.Duration // default 1m
}

// Partition is one entry of [iceberg] partitioning, in Trino's syntax: a
// column (identity), or year, month, day, hour, bucket or truncate of one.
type Partition struct {
	Column    string // stream, subject, sequence or timestamp
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

// partitionColumns are the columns a table may be partitioned by: the
// envelope's, known for every message before its payload is read.
var partitionColumns = []string{"stream", "subject", "sequence", "timestamp"}

// ParsePartition parses one partitioning entry.
func ParsePartition(s string) (Partition, error) {
	s = strings.TrimSpace(s)
	fn, args, ok := strings.Cut(s, "(")
	if !ok {
		if !isPartitionColumn(s) {
			return Partition{}, fmt.Errorf("%q is not a column to partition by; allowed: %s, or a transform such as hour(timestamp)", s, strings.Join(partitionColumns, ", "))
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
		if len(parts) != 1 || p.Column != "timestamp" {
			return Partition{}, fmt.Errorf("%q: %s takes the timestamp column alone, as %s(timestamp)", s, p.Transform, p.Transform)
		}
	case "bucket", "truncate":
		if len(parts) != 2 {
			return Partition{}, fmt.Errorf("%q: %s takes a column and a number, as %s(subject, 16)", s, p.Transform, p.Transform)
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil || n <= 0 {
			return Partition{}, fmt.Errorf("%q: %q is not a positive number", s, parts[1])
		}
		p.N = n
		if p.Transform == "truncate" && p.Column == "timestamp" {
			return Partition{}, fmt.Errorf("%q: truncate takes stream, subject or sequence; use hour, day, month or year for timestamp", s)
		}
	default:
		return Partition{}, fmt.Errorf("%q: unknown transform %q; allowed: year, month, day, hour, bucket, truncate", s, fn)
	}
	if !isPartitionColumn(p.Column) {
		return Partition{}, fmt.Errorf("%q: %q is not a column to partition by; allowed: %s", s, p.Column, strings.Join(partitionColumns, ", "))
	}
	return p, nil
}

func isPartitionColumn(s string) bool {
	for _, c := range partitionColumns {
		if s == c {
			return true
		}
	}
	return false
}

// Defaults of [iceberg].
const (
	DefaultIcebergNamespace      = "jetlake"
	defaultIcebergCommitInterval = time.Minute
)

// iceberg checks [iceberg]: the table a connector writes.
func (c *checker) iceberg(t map[string]any, p keyPath, name string) *Iceberg {
	c.unknown(t, p, &icebergSpec)
	ib := &Iceberg{Catalog: "sql", Namespace: DefaultIcebergNamespace, Table: name, CommitInterval: defaultIcebergCommitInterval}
	if cat, ok := c.str(t, p, "catalog", "sql"); ok {
		switch cat {
		case "sql":
		case "rest", "glue":
			c.report(p.key("catalog"), "%q is not available in this version of jetlake; allowed: sql (a sqlite file or a PostgreSQL database)", cat)
		default:
			c.report(p.key("catalog"), "%q is not a catalog; allowed: sql", cat)
		}
		ib.Catalog = cat
	}
	if !has(t, "uri") {
		c.report(p.key("uri"), "missing; name the catalog, such as \"sqlite:///var/lib/jetlake/catalog.db\" or \"postgres://jetlake@db:5432/lake\"")
	} else if uri, ok := c.str(t, p, "uri", ""); ok {
		ib.URI = uri
		switch {
		case strings.HasPrefix(uri, "sqlite://") && len(uri) > len("sqlite://"):
		case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
			if userinfo, _, ok := strings.Cut(strings.SplitN(uri, "://", 2)[1], "@"); ok && strings.Contains(userinfo, ":") {
				c.report(p.key("uri"), "%q holds a password: "+neverSecrets+"set PGPASSWORD in the environment", RedactURL(uri))
			}
		default:
			c.report(p.key("uri"), "%q is not a catalog location; allowed: sqlite:///path/to/catalog.db, postgres://user@host:port/database", RedactURL(uri))
		}
	}
	for _, key := range []string{"namespace", "table"} {
		def := ib.Namespace
		if key == "table" {
			def = ib.Table
		}
		if v, ok := c.str(t, p, key, def); ok {
			if why := checkToken(v); why != "" || v == "" {
				c.report(p.key(key), "%q is not a name; allowed: letters, digits, '_' and '-'", v)
			}
			if key == "table" {
				ib.Table = v
			} else {
				ib.Namespace = v
			}
		}
	}
	ib.Partitioning = DefaultPartitioning
	if list, ok := c.stringList(t, p, "partitioning"); ok && has(t, "partitioning") {
		ib.Partitioning = nil
		seen := map[string]bool{}
		for _, s := range list {
			part, err := ParsePartition(s)
			if err != nil {
				c.report(p.key("partitioning"), "%v", err)
				continue
			}
			if seen[part.String()] {
				c.report(p.key("partitioning"), "%q is there twice", part.String())
			}
			seen[part.String()] = true
			ib.Partitioning = append(ib.Partitioning, part)
		}
	}
	if d, ok := c.duration(t, p, "commit_interval", defaultIcebergCommitInterval); ok {
		if d < time.Second {
			c.report(p.key("commit_interval"), "%s is too short: every commit adds a snapshot; use at least 1s, such as \"1m\"", d)
		}
		ib.CommitInterval = d
	}
	return ib
}

// checkIceberg checks what [iceberg] asks of [output].
func (c *checker) checkIceberg(out outputCheck, t map[string]any) {
	key := keyPath{}.key("output")
	if out.Format != formats.Parquet {
		c.report(key.key("format"), "%q can not go in an Iceberg table; use \"parquet\" with [iceberg]", out.Format)
	}
	if out.templateSet {
		c.report(key.key("path_template"), "has no meaning with [iceberg]: the table's partitioning names the folders of its data files; remove path_template")
	}
	if has(t, "group_by") {
		c.report(key.key("group_by"), "has no meaning with [iceberg]: a data file holds one partition; remove group_by")
	}
}
