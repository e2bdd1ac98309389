package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
)

// Engines jetlake ddl writes for.
const (
	engineAthena = "athena"
	engineTrino  = "trino"
)

// defaultSince is the first day a date partition projection covers unless
// -since says otherwise.
const defaultSince = "2020-01-01"

// errNoTable is wrapped by the errors of connectors whose output no table
// can read; jetlake ddl exits 1 for them.
var errNoTable = errors.New("no table can read this output")

// cmdDDL prints the CREATE TABLE statement that reads a connector's objects.
// It needs no network: the statement follows from the configuration alone.
func cmdDDL(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ddl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "connector file or directory of *.toml files")
	engine := fs.String("engine", "", "query engine: athena or trino")
	table := fs.String("table", "", "table name, optionally qualified (default: the connector name)")
	location := fs.String("location", "", "table location, e.g. s3://bucket/prefix/ (default: s3://<s3.bucket>/<s3.prefix>/)")
	since := fs.String("since", defaultSince, "first day (YYYY-MM-DD) the {date} and {year} partitions cover")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jetlake ddl: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	opts := ddlOptions{Engine: *engine, Table: *table, Location: *location}
	switch *engine {
	case engineAthena, engineTrino:
	case "":
		fmt.Fprintln(stderr, "jetlake ddl: -engine is required: athena or trino")
		return exitUsage
	default:
		fmt.Fprintf(stderr, "jetlake ddl: -engine %q: want athena or trino\n", *engine)
		return exitUsage
	}
	d, err := time.Parse(time.DateOnly, *since)
	if err != nil {
		fmt.Fprintf(stderr, "jetlake ddl: -since %q: want a day such as %s\n", *since, defaultSince)
		return exitUsage
	}
	opts.Since = d
	if *table != "" && !tableName.MatchString(*table) {
		fmt.Fprintf(stderr, "jetlake ddl: -table %q: want letters, digits and '_', optionally qualified with '.' (analytics.events)\n", *table)
		return exitUsage
	}
	if *location != "" {
		if !strings.Contains(*location, "://") || strings.ContainsAny(*location, "'\\ \t\n") {
			fmt.Fprintf(stderr, "jetlake ddl: -location %q: want a URL such as s3://bucket/prefix/\n", *location)
			return exitUsage
		}
	}
	conns, code, ok := loadConfig(*path, stderr)
	if !ok {
		return code
	}
	if len(conns) > 1 && (*table != "" || *location != "") {
		fmt.Fprintf(stderr, "jetlake ddl: -table and -location name one table, but %s holds %d connectors; pass one connector file\n", *path, len(conns))
		return exitUsage
	}
	code = exitOK
	for i, c := range conns {
		stmt, notes, err := ddl(c, opts)
		if err != nil {
			fmt.Fprintf(stderr, "jetlake ddl: connector %s: %v\n", c.Name, err)
			code = exitFailure
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprint(stdout, stmt)
		for _, n := range notes {
			fmt.Fprintf(stderr, "jetlake ddl: connector %s: note: %s\n", c.Name, n)
		}
	}
	return code
}

var tableName = regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+){0,2}$`)

// ddlOptions are the flags of jetlake ddl.
type ddlOptions struct {
	Engine   string    // engineAthena or engineTrino
	Table    string    // "" means the connector name
	Location string    // "" means s3://<bucket>/<prefix>/
	Since    time.Time // first day of the {date} and {year} projections
}

// ddl returns the CREATE TABLE statement for a connector, and notes for
// the person running it.
func ddl(c *config.Connector, o ddlOptions) (string, []string, error) {
	if c.Iceberg != nil {
		return icebergDDL(c, o)
	}
	cols, err := dataColumns(c)
	if err != nil {
		return "", nil, err
	}
	names := make([]string, len(cols))
	for i, col := range cols {
		names[i] = col.name
	}
	l, err := tableLayout(c, names, o.Since)
	if err != nil {
		return "", nil, err
	}
	base := o.Location
	if base == "" {
		base = "s3://" + c.S3.Bucket + "/"
		if c.S3.Prefix != "" {
			base += c.S3.Prefix + "/"
		}
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	table := o.Table
	if table == "" {
		table = strings.ToLower(strings.ReplaceAll(c.Name, "-", "_"))
	}
	var notes []string
	if c.Output.Format == formats.JSONLines && c.Output.Compression != formats.None {
		notes = append(notes, fmt.Sprintf("objects end in .%s; %s decompresses them by that extension", c.Output.Ext(), engineTitle(o.Engine)))
	}
	for _, p := range l.parts {
		switch p.proj {
		case projInjected:
			notes = append(notes, fmt.Sprintf("partition %s is injected: every query must give its value, e.g. WHERE %s = '...'; the value is as it appears in object keys (characters other than A-Z a-z 0-9 . _ - are %%XX-encoded)", p.name, p.name))
		case projEnum:
			if strings.HasPrefix(p.name, "path_") {
				notes = append(notes, fmt.Sprintf("partition %s holds the %s as it appears in object keys; the data column %s holds it as sent", p.name, strings.TrimPrefix(p.name, "path_"), strings.TrimPrefix(p.name, "path_")))
			}
		}
	}
	if !c.Output.Time.Ingest() && c.Output.PathTemplate.UsesTime() {
		notes = append(notes, fmt.Sprintf("the time partitions hold the event time (time_source %s, rendered in %s), not the time a message reached the stream; the date projection covers %s to now: give -since the day of the oldest event of a backfill",
			c.Output.Time.Source(), c.Output.Time.Zone(), o.Since.Format(time.DateOnly)))
	}
	if c.Output.Format == formats.JSONLines && o.Engine == engineAthena {
		notes = append(notes, `timestamp is RFC 3339 text in UTC with nanoseconds; query it as from_iso8601_timestamp("timestamp")`)
	}
	if o.Engine == engineTrino && len(l.parts) > 0 {
		notes = append(notes, "partition projection needs hive.partition-projection-enabled=true in the Hive catalog's properties")
	}
	var stmt string
	switch o.Engine {
	case engineAthena:
		stmt = athenaDDL(c, table, base, cols, l)
	default:
		stmt = trinoDDL(c, table, base, cols, l)
	}
	return stmt, notes, nil
}

func engineTitle(e string) string {
	if e == engineTrino {
		return "Trino"
	}
	return "Athena"
}
