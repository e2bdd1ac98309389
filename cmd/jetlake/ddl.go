package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Engines jetlake ddl writes for.
const (
	engineAthena = "athena"
	engineTrino  = "trino"
)

// defaultSince is the first day a date partition projection covers unless
// -since says otherwise.
const defaultSince = "2020-01-01"

// lastProjectedYear bounds the integer projection of {year}: Trino's date
// projection has no YEARS unit, so {year} is an integer on both engines and
// needs a fixed upper bound.
const lastProjectedYear = 2099

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

// Projection types, as Athena names them.
const (
	projEnum     = "enum"
	projInjected = "injected"
	projDate     = "date"
	projInteger  = "integer"
)

// column is a table column: a data column or a partition column.
type column struct {
	name   string
	athena string // type in Athena DDL
	trino  string // type in Trino DDL

	// Partition columns only: how the values are projected.
	proj   string
	values []string // projEnum: the values as they appear in object keys
	lo, hi int      // projInteger: range; projDate: unused
	digits int      // projInteger: zero-padded width
	format string   // projDate: Java DateTimeFormatter pattern
	since  string   // projDate: first value of the range
}

// layout is how a path template maps onto a table: partition columns and
// the location template with a ${column} placeholder for each.
type layout struct {
	parts    []column
	template string // relative to the table location, ends in "/" unless empty
	// fixed is the literal directory of a template without variables; the
	// table location then points at it.
	fixed string
}

var partitionKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// varNames are the partition column names of whole-segment variables.
var varNames = map[pathtemplate.Var]string{
	pathtemplate.VarStream:   "stream",
	pathtemplate.VarSubject:  "subject",
	pathtemplate.VarConsumer: "consumer",
	pathtemplate.VarDate:     "date",
	pathtemplate.VarYear:     "year",
	pathtemplate.VarMonth:    "month",
	pathtemplate.VarDay:      "day",
	pathtemplate.VarHour:     "hour",
	pathtemplate.VarMinute:   "minute",
}

func varSource(p pathtemplate.Part) string {
	if p.Var == pathtemplate.VarSubjectToken {
		return fmt.Sprintf("{subject:%d}", p.Token)
	}
	return "{" + varNames[p.Var] + "}"
}

// segments splits the parsed template at "/".
func segments(t *pathtemplate.Template) [][]pathtemplate.Part {
	var segs [][]pathtemplate.Part
	var cur []pathtemplate.Part
	for _, p := range t.Parts() {
		if p.Var != pathtemplate.VarLiteral {
			cur = append(cur, p)
			continue
		}
		pieces := strings.Split(p.Text, "/")
		for i, piece := range pieces {
			if i > 0 {
				segs = append(segs, cur)
				cur = nil
			}
			if piece != "" {
				cur = append(cur, pathtemplate.Part{Var: pathtemplate.VarLiteral, Text: piece})
			}
		}
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

func segmentText(seg []pathtemplate.Part) string {
	var b strings.Builder
	for _, p := range seg {
		if p.Var == pathtemplate.VarLiteral {
			b.WriteString(p.Text)
		} else {
			b.WriteString(varSource(p))
		}
	}
	return b.String()
}

// tableLayout derives the partition columns of a connector's objects from
// its path template. A variable can be a partition only when it fills a
// whole path segment ({date}) or is the value of a key=value segment
// (date={date}); literal segments are kept in the location template as they
// are. dataCols are the names partition columns must not take.
func tableLayout(c *config.Connector, dataCols []string, since time.Time) (*layout, error) {
	t := c.Output.PathTemplate
	l := &layout{}
	byVar := map[pathtemplate.Part]string{} // variable → column name
	taken := map[string]bool{}
	for _, n := range dataCols {
		taken[n] = true
	}
	var tmpl strings.Builder
	literalOnly := true
	for _, seg := range segments(t) {
		var v pathtemplate.Part
		prefix := ""
		key := ""
		switch {
		case len(seg) == 1 && seg[0].Var == pathtemplate.VarLiteral:
			tmpl.WriteString(seg[0].Text + "/")
			continue
		case len(seg) == 1:
			v = seg[0]
		case len(seg) == 2 && seg[0].Var == pathtemplate.VarLiteral && seg[1].Var != pathtemplate.VarLiteral &&
			strings.HasSuffix(seg[0].Text, "=") && strings.Count(seg[0].Text, "=") == 1:
			prefix = seg[0].Text
			key = strings.TrimSuffix(prefix, "=")
			if !partitionKey.MatchString(key) {
				return nil, fmt.Errorf("path_template %q: segment %q: the key %q is not a column name (letters, digits and '_', not starting with a digit)",
					t.String(), segmentText(seg), key)
			}
			v = seg[1]
		default:
			return nil, fmt.Errorf("path_template %q: segment %q mixes a variable with other text, so it cannot be projected as a partition: "+
				"a partition needs each variable to fill a whole path segment, such as {date}, or to be the value of a key=value segment, such as date={date}",
				t.String(), segmentText(seg))
		}
		literalOnly = false
		name, seen := byVar[v]
		if !seen {
			name = key
			if name == "" {
				name = varNames[v.Var]
				if v.Var == pathtemplate.VarSubjectToken {
					name = fmt.Sprintf("subject_%d", v.Token)
				}
			}
			name = strings.ToLower(name)
			if taken[name] {
				// stream and subject are data columns too; the partition
				// holds the value as it appears in the key.
				name = "path_" + name
			}
			if taken[name] {
				return nil, fmt.Errorf("path_template %q: segment %q: partition column %q is already taken; use another key", t.String(), segmentText(seg), name)
			}
			taken[name] = true
			byVar[v] = name
			l.parts = append(l.parts, projection(c, v, name, since))
		}
		tmpl.WriteString(prefix + "${" + name + "}/")
	}
	if literalOnly {
		l.fixed = tmpl.String()
		return l, nil
	}
	l.template = tmpl.String()
	return l, nil
}

// projection describes how the values of a partition column are projected.
func projection(c *config.Connector, v pathtemplate.Part, name string, since time.Time) column {
	col := column{name: name, athena: "string", trino: "varchar"}
	integer := func(lo, hi, digits int) column {
		col.athena, col.trino = "int", "integer"
		col.proj, col.lo, col.hi, col.digits = projInteger, lo, hi, digits
		return col
	}
	switch v.Var {
	case pathtemplate.VarStream:
		col.proj = projEnum
		for _, s := range c.Streams {
			col.values = appendEscaped(col.values, s.Stream)
		}
	case pathtemplate.VarConsumer:
		col.proj = projEnum
		for _, s := range c.Streams {
			col.values = appendEscaped(col.values, s.Consumer)
		}
	case pathtemplate.VarSubject, pathtemplate.VarSubjectToken:
		if values, ok := knownSubjects(c, v); ok {
			col.proj, col.values = projEnum, values
		} else {
			col.proj = projInjected
		}
	case pathtemplate.VarDate:
		col.proj, col.format, col.since = projDate, "yyyy-MM-dd", since.Format(time.DateOnly)
	case pathtemplate.VarYear:
		return integer(since.Year(), max(lastProjectedYear, since.Year()), 4)
	case pathtemplate.VarMonth:
		return integer(1, 12, 2)
	case pathtemplate.VarDay:
		return integer(1, 31, 2)
	case pathtemplate.VarHour:
		return integer(0, 23, 2)
	case pathtemplate.VarMinute:
		return integer(0, 59, 2)
	}
	return col
}

func appendEscaped(values []string, v string) []string {
	e := string(pathtemplate.AppendEscaped(nil, v))
	if slices.Contains(values, e) {
		return values
	}
	return append(values, e)
}

// knownSubjects returns the values {subject} or {subject:N} can render to
// when the filter subjects fix them: no stream reads its whole stream and no
// wildcard reaches the rendered part.
func knownSubjects(c *config.Connector, v pathtemplate.Part) ([]string, bool) {
	var values []string
	for _, s := range c.Streams {
		if len(s.Subjects) == 0 {
			return nil, false
		}
		for _, f := range s.Subjects {
			toks := strings.Split(f, ".")
			if v.Var == pathtemplate.VarSubject {
				if slices.Contains(toks, "*") || slices.Contains(toks, ">") {
					return nil, false
				}
				values = appendEscaped(values, f)
				continue
			}
			n := v.Token
			for i, tok := range toks {
				if i < n && tok == ">" || i == n-1 && tok == "*" {
					return nil, false
				}
			}
			tok := ""
			if len(toks) >= n {
				tok = toks[n-1]
			}
			values = appendEscaped(values, tok)
		}
	}
	return values, len(values) > 0
}

// dataColumns are the columns of the records the connector writes.
func dataColumns(c *config.Connector) ([]column, error) {
	o := c.Output
	switch o.Format {
	case formats.JSONArray:
		return nil, fmt.Errorf("format %s writes one JSON array per object, which Athena and Trino cannot read as rows; use json_lines or parquet (DuckDB and Spark read json_array): %w", o.Format, errNoTable)
	case formats.Raw:
		return nil, fmt.Errorf("format %s writes the payload bytes with no record structure, which Athena and Trino cannot read as rows; use json_lines or parquet: %w", o.Format, errNoTable)
	case formats.JSONLines:
		if !o.IncludeMetadata {
			return nil, fmt.Errorf("include_metadata = false: each record is the payload alone, whose fields jetlake does not know; set include_metadata = true, or declare the payload's fields by hand: %w", errNoTable)
		}
	case formats.Parquet:
	default:
		return nil, fmt.Errorf("format %q: %w", o.Format, errNoTable)
	}
	var cols []column
	for _, f := range formats.Fields(o.FormatsOptions()) {
		col, ok := fieldTypes[f.Type]
		if !ok {
			return nil, fmt.Errorf("output.columns %s: type %q has no table type", f.Name, f.Type)
		}
		if f.Type == formats.TypeTimestamp && o.Format == formats.JSONLines {
			// The record holds RFC 3339 text with nine fractional digits:
			// Trino's OpenX JSON reader parses it, Athena's is not
			// guaranteed to, so Athena gets the text.
			col.athena = "string"
		}
		col.name = f.Name
		cols = append(cols, col)
	}
	return cols, nil
}

// fieldTypes are the table types of the fields' logical types. A JSON
// value is a string: in json_lines records, the OpenX JSON SerDe renders
// objects and arrays declared as string as their JSON text.
var fieldTypes = map[formats.ColumnType]column{
	formats.TypeString:    {athena: "string", trino: "varchar"},
	formats.TypeJSON:      {athena: "string", trino: "varchar"},
	formats.TypeInt64:     {athena: "bigint", trino: "bigint"},
	formats.TypeInt32:     {athena: "int", trino: "integer"},
	formats.TypeDouble:    {athena: "double", trino: "double"},
	formats.TypeBoolean:   {athena: "boolean", trino: "boolean"},
	formats.TypeTimestamp: {athena: "timestamp", trino: "timestamp"},
	formats.TypeDate:      {athena: "date", trino: "date"},
}

// ddl returns the CREATE TABLE statement for a connector, and notes for
// the person running it.
func ddl(c *config.Connector, o ddlOptions) (string, []string, error) {
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
		notes = append(notes, fmt.Sprintf("objects end in .%s; %s decompresses them by that extension", objectExt(c), engineTitle(o.Engine)))
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

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// athenaReserved are the reserved keywords of Athena DDL (Hive); as column
// names they need backticks.
var athenaReserved = wordSet(`all alter and array as authorization between bigint binary boolean both by case cast char
column conf constraint commit create cross cube current current_date current_timestamp cursor database date
dayofweek decimal delete describe distinct double drop else end exchange exists extended external extract false
fetch float floor following for foreign from full function grant group grouping having if import in inner insert
int integer intersect interval into is join lateral left less like local macro map more none not null numeric of
on only or order out outer over partialscan partition percent preceding precision preserve primary procedure range
reads reduce regexp references revoke right rlike rollback rollup row rows select set smallint start table
tablesample then time timestamp to transform trigger true truncate unbounded union uniquejoin update user using
utc_timestamp values varchar views when where window with`)

// trinoReserved are Trino's reserved keywords, and type names that read
// better quoted; as column names they get double quotes.
var trinoReserved = wordSet(`alter and as between by case cast constraint create cross cube current_catalog current_date
current_path current_role current_schema current_time current_timestamp current_user deallocate delete describe
distinct drop else end escape except execute exists extract false for from full function group grouping having in
inner insert intersect into is join json_array json_exists json_object json_query json_table json_value left like
listagg localtime localtimestamp natural normalize not null on or order outer prepare recursive right rollup select
skip table then trim true uescape union unnest using values when where with date time timestamp`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

var plainIdent = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func athenaIdent(name string) string {
	if plainIdent.MatchString(name) && !athenaReserved[name] {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

func trinoIdent(name string) string {
	if plainIdent.MatchString(name) && !trinoReserved[name] {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func qualified(name string, ident func(string) string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = ident(p)
	}
	return strings.Join(parts, ".")
}

func athenaDDL(c *config.Connector, table, base string, cols []column, l *layout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE EXTERNAL TABLE IF NOT EXISTS %s (\n", qualified(table, athenaIdent))
	for i, col := range cols {
		fmt.Fprintf(&b, "  %s %s%s\n", athenaIdent(col.name), col.athena, comma(i, len(cols)))
	}
	b.WriteString(")\n")
	if len(l.parts) > 0 {
		b.WriteString("PARTITIONED BY (\n")
		for i, p := range l.parts {
			fmt.Fprintf(&b, "  %s %s%s\n", athenaIdent(p.name), p.athena, comma(i, len(l.parts)))
		}
		b.WriteString(")\n")
	}
	if c.Output.Format == formats.Parquet {
		b.WriteString("STORED AS PARQUET\n")
	} else {
		b.WriteString("ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'\n")
		b.WriteString("STORED AS INPUTFORMAT 'org.apache.hadoop.mapred.TextInputFormat'\n")
		b.WriteString("OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat'\n")
	}
	fmt.Fprintf(&b, "LOCATION %s", sqlString(base+l.fixed))
	if len(l.parts) == 0 {
		b.WriteString(";\n")
		return b.String()
	}
	var props [][2]string
	add := func(k, v string) { props = append(props, [2]string{k, v}) }
	add("projection.enabled", "true")
	for _, p := range l.parts {
		k := "projection." + p.name + "."
		add(k+"type", p.proj)
		switch p.proj {
		case projEnum:
			add(k+"values", strings.Join(p.values, ","))
		case projDate:
			add(k+"format", p.format)
			add(k+"range", p.since+",NOW")
			add(k+"interval", "1")
			add(k+"interval.unit", "DAYS")
		case projInteger:
			add(k+"range", fmt.Sprintf("%d,%d", p.lo, p.hi))
			add(k+"digits", strconv.Itoa(p.digits))
		}
	}
	add("storage.location.template", base+l.template)
	b.WriteString("\nTBLPROPERTIES (\n")
	for i, p := range props {
		fmt.Fprintf(&b, "  %s = %s%s\n", sqlString(p[0]), sqlString(p[1]), comma(i, len(props)))
	}
	b.WriteString(");\n")
	return b.String()
}

func trinoDDL(c *config.Connector, table, base string, cols []column, l *layout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", qualified(table, trinoIdent))
	all := len(cols) + len(l.parts)
	for i, col := range cols {
		fmt.Fprintf(&b, "  %s %s%s\n", trinoIdent(col.name), col.trino, comma(i, all))
	}
	for i, p := range l.parts {
		var props []string
		switch p.proj {
		case projEnum:
			props = append(props, "partition_projection_type = 'ENUM'", "partition_projection_values = "+sqlArray(p.values))
		case projInjected:
			props = append(props, "partition_projection_type = 'INJECTED'")
		case projDate:
			props = append(props, "partition_projection_type = 'DATE'",
				"partition_projection_format = "+sqlString(p.format),
				"partition_projection_range = "+sqlArray([]string{p.since, "NOW"}),
				"partition_projection_interval = 1",
				"partition_projection_interval_unit = 'DAYS'")
		case projInteger:
			props = append(props, "partition_projection_type = 'INTEGER'",
				"partition_projection_range = "+sqlArray([]string{strconv.Itoa(p.lo), strconv.Itoa(p.hi)}),
				fmt.Sprintf("partition_projection_digits = %d", p.digits))
		}
		fmt.Fprintf(&b, "  %s %s WITH (%s)%s\n", trinoIdent(p.name), p.trino, strings.Join(props, ", "), comma(len(cols)+i, all))
	}
	b.WriteString(")\nWITH (\n")
	format := "OPENX_JSON"
	if c.Output.Format == formats.Parquet {
		format = "PARQUET"
	}
	props := []string{
		"format = " + sqlString(format),
		"external_location = " + sqlString(base+l.fixed),
	}
	if len(l.parts) > 0 {
		names := make([]string, len(l.parts))
		for i, p := range l.parts {
			names[i] = p.name
		}
		props = append(props,
			"partitioned_by = "+sqlArray(names),
			"partition_projection_enabled = true",
			"partition_projection_location_template = "+sqlString(base+l.template))
	}
	for i, p := range props {
		fmt.Fprintf(&b, "  %s%s\n", p, comma(i, len(props)))
	}
	b.WriteString(");\n")
	return b.String()
}

func sqlArray(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = sqlString(v)
	}
	return "ARRAY[" + strings.Join(q, ", ") + "]"
}

func comma(i, n int) string {
	if i < n-1 {
		return ","
	}
	return ""
}
