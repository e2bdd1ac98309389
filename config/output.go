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

// outputCheck is Output with what later checks need to know.
type outputCheck struct {
	Output
	templateSet bool // path_template is in the file
}

// output checks [output]: the format of the objects, their compression,
// where they go and what each record holds.
func (c *checker) output(t map[string]any, p keyPath) outputCheck {
	c.unknown(t, p, &outputSpec)
	o := outputCheck{templateSet: has(t, "path_template")}
	formatOK := c.outputFormat(t, p, &o)
	c.outputLayout(t, p, &o)
	c.outputRecords(t, p, &o, formatOK)
	c.outputParquet(t, p, &o, formatOK)
	c.outputTime(t, p, &o)
	c.checkTemplateColumns(p, &o)
	return o
}

// outputFormat checks format and, when the format is known, compression;
// it reports whether the format is known.
func (c *checker) outputFormat(t map[string]any, p keyPath, o *outputCheck) bool {
	formatOK := false
	if f, ok := c.str(t, p, "format", string(formats.JSONLines)); ok {
		switch f := formats.Format(f); f {
		case formats.JSONLines, formats.JSONArray, formats.Raw, formats.Parquet:
			o.Format, formatOK = f, true
		default:
			c.report(p.key("format"), "%q is not a format; allowed: json_lines, json_array, raw, parquet", f)
		}
	}
	if !formatOK {
		return false
	}
	allowed := []formats.Compression{formats.None, formats.Gzip, formats.Zstd}
	if o.Format == formats.Parquet {
		allowed = []formats.Compression{formats.Snappy, formats.Zstd, formats.Gzip, formats.None}
	}
	// The first allowed is the format's default.
	if z, ok := c.str(t, p, "compression", string(allowed[0])); ok {
		if slices.Contains(allowed, formats.Compression(z)) {
			o.Compression = formats.Compression(z)
		} else {
			c.report(p.key("compression"), "%q is not a compression for %s; allowed: %s", z, o.Format, join(allowed))
		}
	}
	return true
}

// outputLayout checks how messages are filed into objects: path_template,
// group_by and max_open_directories.
func (c *checker) outputLayout(t map[string]any, p keyPath, o *outputCheck) {
	if src, ok := c.str(t, p, "path_template", defaultPathTemplate); ok {
		tpl, err := pathtemplate.Parse(src)
		var se *pathtemplate.SyntaxError
		switch {
		case errors.As(err, &se):
			c.report(p.key("path_template"), "%q: at byte %d: %s", src, se.Offset, se.Msg)
		case err != nil:
			c.report(p.key("path_template"), "%q: %v", src, err)
		default:
			o.PathTemplate = tpl
			if msg := placement(tpl); msg != "" {
				c.report(p.key("path_template"), "%q: %s", src, msg)
			}
		}
	}
	if g, ok := c.str(t, p, "group_by", GroupBySubject); ok {
		switch g {
		case GroupBySubject, GroupByPath:
			o.GroupBy = g
		default:
			c.report(p.key("group_by"), "%q is not a grouping; allowed: subject (one file per subject and directory), path (one file per directory)", g)
		}
	}
	if n, ok := c.integer(t, p, "max_open_directories", defaultMaxOpenDirectories); ok {
		if n < 0 || n > maxOpenDirectories {
			c.report(p.key("max_open_directories"), "%d is out of range; allowed: 0 (no cap) to %d", n, maxOpenDirectories)
		} else {
			o.MaxOpenDirectories = int(n)
		}
	}
}

// outputRecords checks what a record holds besides its payload
// (include_metadata, include_headers, keep_exact_payload), and the raw
// format's raw_delimiter.
func (c *checker) outputRecords(t map[string]any, p keyPath, o *outputCheck, formatOK bool) {
	o.IncludeMetadata, _ = c.boolean(t, p, "include_metadata", true)
	o.IncludeHeaders, _ = c.boolean(t, p, "include_headers", false)
	// Raw objects hold the payloads alone: the record keys do not apply,
	// and nobody should believe they do.
	for _, key := range []string{"include_metadata", "include_headers"} {
		if has(t, key) && formatOK && o.Format == formats.Raw {
			c.report(p.key(key), "does not apply to the raw format, which writes the payloads alone; remove %s, or choose json_lines, json_array or parquet", key)
		}
	}
	if exact, ok := c.boolean(t, p, "keep_exact_payload", false); ok && has(t, "keep_exact_payload") {
		json := o.Format == formats.JSONLines || o.Format == formats.JSONArray
		switch {
		case !formatOK:
		case !json:
			c.report(p.key("keep_exact_payload"), "is only for the json_lines and json_array formats, and format is %s; remove keep_exact_payload or set format = \"json_lines\"", o.Format)
		case exact && !o.IncludeMetadata:
			c.report(p.key("keep_exact_payload"), "needs include_metadata = true: without it a record is the payload alone, with no field to keep the bytes in; remove keep_exact_payload or set include_metadata = true")
		default:
			o.KeepExactPayload = exact
		}
	}
	if d, ok := c.str(t, p, "raw_delimiter", ""); ok {
		if d != "" && formatOK && o.Format != formats.Raw {
			c.report(p.key("raw_delimiter"), "is only for the raw format, and format is %s; remove raw_delimiter or set format = \"raw\"", o.Format)
		}
		o.RawDelimiter = d
	}
}

// outputParquet checks the keys of the parquet format: row_group_size,
// keep_payload, on_type_error and the typed columns.
func (c *checker) outputParquet(t map[string]any, p keyPath, o *outputCheck, formatOK bool) {
	parquet := o.Format == formats.Parquet
	// Set in the file with another format, the parquet keys are an error,
	// so that nobody believes they apply.
	parquetOnly := func(key string) bool {
		if has(t, key) && formatOK && !parquet {
			c.report(p.key(key), "is only for the parquet format, and format is %s; remove %s or set format = \"parquet\"", o.Format, key)
			return false
		}
		return true
	}
	if n, ok := c.size(t, p, "row_group_size", defaultRowGroupSize); ok && parquetOnly("row_group_size") {
		switch {
		case n < minRowGroupSize || n > maxRowGroupSize:
			c.report(p.key("row_group_size"), "%s is out of range; allowed: %s to %s", FormatSize(n), FormatSize(minRowGroupSize), FormatSize(maxRowGroupSize))
		case parquet:
			o.RowGroupSize = n
		}
	}
	if keep, ok := c.boolean(t, p, "keep_payload", true); ok && parquetOnly("keep_payload") {
		o.KeepPayload = keep
	} else {
		o.KeepPayload = true
	}
	if s, ok := c.str(t, p, "on_type_error", string(formats.RejectTypeErrors)); ok {
		switch s := formats.TypeErrorPolicy(s); s {
		case formats.RejectTypeErrors, formats.NullTypeErrors:
			o.OnTypeError = s
		default:
			c.report(p.key("on_type_error"), "%q is not a type error policy; allowed: reject (the message goes under _jetlake/ instead of the data), null (the column is null)", s)
		}
	}
	if has(t, "columns") {
		o.Columns = c.columns(t["columns"], p.key("columns"))
	}
}

// columns checks the [[output.columns]] entries.
func (c *checker) columns(v any, p keyPath) []Column {
	var tables []map[string]any
	switch v := v.(type) {
	case []map[string]any:
		tables = v
	case []any:
		for i, e := range v {
			if t, ok := e.(map[string]any); ok {
				tables = append(tables, t)
			} else {
				c.report(p.index(i+1), "must be a table, not %s", typeName(e))
				tables = append(tables, nil)
			}
		}
	default:
		c.report(p, "must be an array of tables, not %s; write a [[output.columns]] header for each column", typeName(v))
		return nil
	}
	seen := make(map[string]int)
	var out []Column
	for i, t := range tables {
		if t == nil {
			continue
		}
		cp := p.index(i + 1)
		col, ok := c.column(t, cp)
		if col.Name != "" {
			if j, dup := seen[col.Name]; dup {
				c.report(cp.key("name"), "%q is already the name of output.columns[%d]; column names must be unique", col.Name, j)
				ok = false
			} else {
				seen[col.Name] = i + 1
			}
		}
		if ok {
			out = append(out, col)
		}
	}
	return out
}

// column checks one [[output.columns]] entry; it reports false when the
// entry has a problem.
func (c *checker) column(t map[string]any, p keyPath) (Column, bool) {
	c.unknown(t, p, &columnSpec)
	nprobs := len(c.probs)
	var col Column

	if !has(t, "name") {
		c.report(p.key("name"), "missing; name the column, such as \"user_id\"")
	} else if name, ok := c.str(t, p, "name", ""); ok {
		switch {
		case !columnName.MatchString(name):
			c.report(p.key("name"), "%q is not a column name; use lower-case letters, digits and '_', not starting with a digit, such as \"user_id\"", name)
		case slices.Contains(formats.EnvelopeNames(), name):
			c.report(p.key("name"), "%q is the name of an envelope column; the names %s are taken", name, join(formats.EnvelopeNames()))
		default:
			col.Name = name
		}
	}

	if !has(t, "source") {
		c.report(p.key("source"), "missing; give the dotted path of the payload field, such as \"user.id\" or \"items.0.sku\"")
	} else if src, ok := c.str(t, p, "source", ""); ok {
		if src == "" || slices.Contains(strings.Split(src, "."), "") {
			c.report(p.key("source"), "%q is not a path; give member names (or array indexes) separated by dots, such as \"user.id\" or \"items.0.sku\"", src)
		} else {
			col.Source = src
		}
	}

	types := []formats.ColumnType{formats.TypeString, formats.TypeInt64, formats.TypeInt32, formats.TypeDouble,
		formats.TypeBoolean, formats.TypeTimestamp, formats.TypeDate, formats.TypeJSON}
	if !has(t, "type") {
		c.report(p.key("type"), "missing; allowed: %s", join(types))
	} else if typ, ok := c.str(t, p, "type", ""); ok {
		if slices.Contains(types, formats.ColumnType(typ)) {
			col.Type = formats.ColumnType(typ)
		} else {
			c.report(p.key("type"), "%q is not a column type; allowed: %s", typ, join(types))
		}
	}

	if u, ok := c.str(t, p, "unit", ""); ok && has(t, "unit") {
		switch {
		case col.Type != "" && col.Type != formats.TypeTimestamp:
			c.report(p.key("unit"), "is only for timestamp columns, and type is %s; remove unit", col.Type)
		case u == "s" || u == "ms" || u == "us" || u == "ns":
			col.Unit = u
		default:
			c.report(p.key("unit"), "%q is not a unit; allowed: s, ms, us, ns (of epoch numbers)", u)
		}
	}
	col.Coerce, _ = c.boolean(t, p, "coerce", false)
	return col, len(c.probs) == nprobs
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
