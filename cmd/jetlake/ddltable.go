package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Projection types, as Athena names them.
const (
	projEnum     = "enum"
	projInjected = "injected"
	projDate     = "date"
	projInteger  = "integer"
)

// lastProjectedYear bounds the integer projection of {year}: Trino's date
// projection has no YEARS unit, so {year} is an integer on both engines and
// needs a fixed upper bound.
const lastProjectedYear = 2099

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
	switch p.Var {
	case pathtemplate.VarSubjectToken:
		return fmt.Sprintf("{subject:%d}", p.Token)
	case pathtemplate.VarColumn:
		return "{column:" + p.Text + "}"
	case pathtemplate.VarHeader:
		return "{header:" + p.Text + "}"
	}
	return "{" + varNames[p.Var] + "}"
}

// partitionName is the partition column name of a whole-segment variable:
// {subject:2} is subject_2, {column:tenant} tenant, {header:X-Region}
// x_region.
func partitionName(p pathtemplate.Part) string {
	switch p.Var {
	case pathtemplate.VarSubjectToken:
		return fmt.Sprintf("subject_%d", p.Token)
	case pathtemplate.VarColumn:
		return p.Text
	case pathtemplate.VarHeader:
		b := []byte(strings.ToLower(p.Text))
		for i, c := range b {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				b[i] = '_'
			}
		}
		if b[0] >= '0' && b[0] <= '9' {
			return "h_" + string(b)
		}
		return string(b)
	}
	return varNames[p.Var]
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
	// Who took each column name, for the error when a partition wants it.
	taken := map[string]string{}
	for _, n := range dataCols {
		taken[n] = fmt.Sprintf("the data column %q", n)
	}
	if c.Output.Format == formats.Parquet {
		// The other formats write no typed column: theirs serve paths only.
		for _, col := range c.Output.Columns {
			taken[col.Name] = fmt.Sprintf("the typed column %q; rename it in [[output.columns]]", col.Name)
		}
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
				name = partitionName(v)
			}
			name = strings.ToLower(name)
			if taken[name] != "" {
				// stream and subject are data columns too; the partition
				// holds the value as it appears in the key.
				name = "path_" + name
			}
			if by := taken[name]; by != "" {
				return nil, fmt.Errorf("path_template %q: segment %q: partition column %q is already %s, or write the segment as key={...} with another key",
					t.String(), segmentText(seg), name, by)
			}
			taken[name] = fmt.Sprintf("the partition of segment %q", segmentText(seg))
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
	case pathtemplate.VarColumn, pathtemplate.VarHeader:
		// Values from the content are unbounded: every query names its own.
		col.proj = projInjected
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
