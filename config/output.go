package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// compressions lists the compressions of format f; the first is its
// default.
func compressions(f formats.Format) []formats.Compression {
	if f == formats.Parquet {
		return []formats.Compression{formats.Snappy, formats.Zstd, formats.Gzip, formats.None}
	}
	return []formats.Compression{formats.None, formats.Gzip, formats.Zstd}
}

// parquetOutput reports whether o writes parquet, where the parquet keys
// apply.
func parquetOutput(o *Output, _ *Connector) bool { return o.Format == formats.Parquet }

// bareObjects reports whether conn writes bare objects, where the keys
// that place them apply; a table's partitioning places its files.
func bareObjects(_ *Output, conn *Connector) bool { return conn.Iceberg == nil }

// templateKind reads a path template.
var templateKind = kind[*pathtemplate.Template]{
	name: "string",
	decode: func(c *checker, p keyPath, v any) (*pathtemplate.Template, bool) {
		src, ok := textKind[string]().decode(c, p, v)
		if !ok {
			return nil, false
		}
		tpl, err := pathtemplate.Parse(src)
		var se *pathtemplate.SyntaxError
		switch {
		case errors.As(err, &se):
			c.report(p, "%q: at byte %d: %s", src, se.Offset, se.Msg)
		case err != nil:
			c.report(p, "%q: %v", src, err)
		default:
			return tpl, true
		}
		return nil, false
	},
	encode: func(tpl *pathtemplate.Template) string {
		if tpl == nil {
			return tomlString("")
		}
		return tomlString(tpl.String())
	},
}

// templatePlacement is the check of a path template on its own: see
// placement.
func templatePlacement(tpl *pathtemplate.Template) string {
	if msg := placement(tpl); msg != "" {
		return fmt.Sprintf("%q: %s", tpl.String(), msg)
	}
	return ""
}

// outputCrossChecks checks the rules of [output] that relate its keys:
// what each format allows (its compressions, the record keys, the keys of
// the parquet and raw formats, each zero or its default where it does not
// apply), and what the event time and the path template read of the typed
// columns.
func (c *checker) outputCrossChecks(t map[string]any, p keyPath, o *Output) {
	formatOK := c.ok(p.key("format"))
	if key := p.key("compression"); formatOK && has(t, "compression") && c.ok(key) && !slices.Contains(compressions(o.Format), o.Compression) {
		c.report(key, "%q is not a compression for %s; allowed: %s", o.Compression, o.Format, join(compressions(o.Format)))
		c.fail(key)
		o.Compression = ""
	}
	c.outputRecords(t, p, o, formatOK)
	parquet := o.Format == formats.Parquet
	// Set in the file with another format, the parquet keys are an error,
	// so that nobody believes they apply.
	for _, key := range []string{"row_group_size", "keep_payload"} {
		if has(t, key) && c.ok(p.key(key)) && formatOK && !parquet {
			c.report(p.key(key), "is only for the parquet format, and format is %s; remove %s or set format = \"parquet\"", o.Format, key)
		}
	}
	if !parquet {
		o.RowGroupSize, o.KeepPayload = 0, true
	}
	c.outputTime(t, p, o)
	c.checkTemplateColumns(p, o)
}

// outputRecords checks what the record keys (include_metadata,
// include_headers, keep_exact_payload) and raw_delimiter ask of the
// format.
func (c *checker) outputRecords(t map[string]any, p keyPath, o *Output, formatOK bool) {
	// Raw objects hold the payloads alone: the record keys do not apply,
	// and nobody should believe they do.
	for _, key := range []string{"include_metadata", "include_headers"} {
		if has(t, key) && formatOK && o.Format == formats.Raw {
			c.report(p.key(key), "does not apply to the raw format, which writes the payloads alone; remove %s, or choose json_lines, json_array or parquet", key)
		}
	}
	if key := p.key("keep_exact_payload"); has(t, "keep_exact_payload") && c.ok(key) {
		json := o.Format == formats.JSONLines || o.Format == formats.JSONArray
		switch {
		case !formatOK:
			o.KeepExactPayload = false
		case !json:
			c.report(key, "is only for the json_lines and json_array formats, and format is %s; remove keep_exact_payload or set format = \"json_lines\"", o.Format)
			o.KeepExactPayload = false
		case o.KeepExactPayload && !o.IncludeMetadata:
			c.report(key, "needs include_metadata = true: without it a record is the payload alone, with no field to keep the bytes in; remove keep_exact_payload or set include_metadata = true")
			o.KeepExactPayload = false
		}
	}
	if c.ok(p.key("raw_delimiter")) && o.RawDelimiter != "" && formatOK && o.Format != formats.Raw {
		c.report(p.key("raw_delimiter"), "is only for the raw format, and format is %s; remove raw_delimiter or set format = \"raw\"", o.Format)
	}
}

// columnTypes are the types of a typed column.
var columnTypes = []formats.ColumnType{formats.TypeString, formats.TypeInt64, formats.TypeInt32, formats.TypeDouble,
	formats.TypeBoolean, formats.TypeTimestamp, formats.TypeDate, formats.TypeJSON}

// checkColumnName checks the name of a typed column.
func checkColumnName(name string) string {
	switch {
	case !columnName.MatchString(name):
		return fmt.Sprintf("%q is not a column name; use lower-case letters, digits and '_', not starting with a digit, such as \"user_id\"", name)
	case slices.Contains(formats.EnvelopeNames(), name):
		return fmt.Sprintf("%q is the name of an envelope column; the names %s are taken", name, join(formats.EnvelopeNames()))
	}
	return ""
}

// checkColumnSource checks the path of a typed column into the payload.
func checkColumnSource(src string) string {
	if src == "" || slices.Contains(strings.Split(src, "."), "") {
		return fmt.Sprintf("%q is not a path; give member names (or array indexes) separated by dots, such as \"user.id\" or \"items.0.sku\"", src)
	}
	return ""
}

// columnCrossChecks checks the rules that relate the keys of one
// [[output.columns]] entry, col, the table t at p, and it to the entries
// before it: a unit only for a timestamp column, and a name of its own.
func (c *checker) columnCrossChecks(t map[string]any, p keyPath, col *Column, earlier []Column) {
	if has(t, "unit") && c.ok(p.key("unit")) && col.Type != "" && col.Type != formats.TypeTimestamp {
		c.report(p.key("unit"), "is only for timestamp columns, and type is %s; remove unit", col.Type)
		col.Unit = ""
	}
	if col.Name == "" {
		return
	}
	for j, e := range earlier {
		if e.Name == col.Name {
			c.report(p.key("name"), "%q is already the name of output.columns[%d]; column names must be unique", col.Name, j+1)
			break
		}
	}
}

// columnName is what a typed column may be called: a lower-case SQL
// identifier that Athena, Trino and DuckDB take without quoting.
var columnName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// placement says why a path template would let a publisher choose where
// objects go beside the connector's folders, or "" when it does not. Its
// first segment holds literal text, {stream} or {consumer}, which the
// connector's configuration chooses, or a time variable, so that no
// payload, header or subject names another table's folder under the
// prefix; and no segment's literal
// text starts with pathtemplate.OwnDir, or with the start of it before a
// variable, where loss markers and rejected messages are read from. (A
// value that starts a segment never renders as OwnDir: see pathtemplate.)
func placement(tpl *pathtemplate.Template) string {
	seg := 0         // the segment's index
	lead := ""       // the segment's literal text before its first variable
	onlyText := true // the segment had no variable yet
	ownDir := func() string {
		start := fmt.Sprintf("starts with %q", pathtemplate.OwnDir)
		if !strings.HasPrefix(lead, pathtemplate.OwnDir) {
			start = fmt.Sprintf("starts with %q, which a value could complete to %q", lead, pathtemplate.OwnDir)
		}
		return fmt.Sprintf("segment %d %s, the folder of jetlake's own objects (loss markers, rejected messages); name it otherwise", seg+1, start)
	}
	for _, p := range tpl.Parts() {
		if p.Var != pathtemplate.VarLiteral {
			if onlyText && (strings.HasPrefix(lead, pathtemplate.OwnDir) || lead != "" && strings.HasPrefix(pathtemplate.OwnDir, lead)) {
				return ownDir()
			}
			onlyText = false
			if seg == 0 && chosen(p.Var) {
				return fmt.Sprintf("its first segment holds %s, which the messages choose: a publisher could aim objects at another table's folder or at %s/; start the template with literal text or {stream}, such as \"{stream}/%s\"",
					varText(p), pathtemplate.OwnDir, tpl.String())
			}
			continue
		}
		rest := p.Text
		for {
			piece, after, more := strings.Cut(rest, "/")
			if onlyText {
				lead += piece
			}
			if !more {
				break
			}
			if onlyText && strings.HasPrefix(lead, pathtemplate.OwnDir) {
				return ownDir()
			}
			seg, lead, onlyText, rest = seg+1, "", true, after
		}
	}
	if onlyText && strings.HasPrefix(lead, pathtemplate.OwnDir) {
		return ownDir()
	}
	return ""
}

// chosen reports whether the messages choose what v renders: their
// subject, a payload's column or a header. (Time variables render digits
// and "-" only; the event time bounds them.)
func chosen(v pathtemplate.Var) bool {
	switch v {
	case pathtemplate.VarSubject, pathtemplate.VarSubjectToken, pathtemplate.VarColumn, pathtemplate.VarHeader:
		return true
	}
	return false
}

// varText writes a template variable as a template holds it.
func varText(p pathtemplate.Part) string {
	switch p.Var {
	case pathtemplate.VarSubject:
		return "{subject}"
	case pathtemplate.VarSubjectToken:
		return fmt.Sprintf("{subject:%d}", p.Token)
	case pathtemplate.VarColumn:
		return "{column:" + p.Text + "}"
	case pathtemplate.VarHeader:
		return "{header:" + p.Text + "}"
	}
	return "a variable"
}
