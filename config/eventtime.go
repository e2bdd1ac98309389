package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// EventTime says which time a message's path takes: [output] time_source,
// time_fallback, time_unit and timezone. The zero value is the JetStream
// timestamp (ingest time) rendered in UTC.
type EventTime struct {
	Column   string         // time_source = "column:<name>": a timestamp or date column of [[output.columns]]
	Header   string         // time_source = "header:<Name>": a header holding RFC 3339 or an epoch number in Unit
	Unit     string         // time_unit: "s", "ms", "us" or "ns" for a header's epoch numbers; "" takes RFC 3339 only
	Reject   bool           // time_fallback = "reject": a message without a usable event time goes to the rejected objects
	Location *time.Location // timezone, for the rendered path only; nil is UTC
}

// Ingest reports whether paths take the JetStream timestamp.
func (e EventTime) Ingest() bool { return e.Column == "" && e.Header == "" }

// Source returns time_source as written: "ingest", "column:<name>" or
// "header:<Name>".
func (e EventTime) Source() string {
	switch {
	case e.Column != "":
		return "column:" + e.Column
	case e.Header != "":
		return "header:" + e.Header
	}
	return TimeSourceIngest
}

// Fallback returns time_fallback as written: "ingest" or "reject".
func (e EventTime) Fallback() string {
	if e.Reject {
		return TimeFallbackReject
	}
	return TimeFallbackIngest
}

// Zone returns timezone as written: an IANA name, "UTC" by default.
func (e EventTime) Zone() string {
	if e.Location == nil {
		return "UTC"
	}
	return e.Location.String()
}

// The values of time_source and time_fallback.
const (
	TimeSourceIngest   = "ingest"
	TimeFallbackIngest = "ingest"
	TimeFallbackReject = "reject"
)

// checkTimeSource checks time_source on its own: ingest, column:<name>
// or header:<Name>.
func checkTimeSource(src string) string {
	kind, name, _ := strings.Cut(src, ":")
	switch {
	case src == TimeSourceIngest:
	case kind == "column" && name != "":
	case kind == "header" && name != "" && !strings.ContainsAny(name, " :\t"):
	default:
		return fmt.Sprintf("%q is not a time source; allowed: ingest (the JetStream timestamp), column:<name> (a timestamp or date column of [[output.columns]]), header:<Name> (a header holding RFC 3339, or an epoch number with time_unit)", src)
	}
	return ""
}

// setTimeSource sets the event time of o to time_source src, which
// checkTimeSource allows.
func (o *Output) setTimeSource(src string) {
	kind, name, _ := strings.Cut(src, ":")
	o.Time.Column, o.Time.Header = "", ""
	switch kind {
	case "column":
		o.Time.Column = name
	case "header":
		o.Time.Header = name
	}
}

// fallbackKind reads time_fallback into EventTime.Reject.
var fallbackKind = simpleKind("string", func(v any) (bool, string) {
	f, ok := v.(string)
	switch {
	case !ok:
		return false, "must be a string, not " + typeName(v)
	case f == TimeFallbackIngest:
		return false, ""
	case f == TimeFallbackReject:
		return true, ""
	}
	return false, fmt.Sprintf("%q is not a fallback; allowed: ingest (the JetStream timestamp, counted in jetlake_event_time_fallback_total), reject (the message goes to the rejected objects with the reason)", f)
}, func(reject bool) string { return tomlString(EventTime{Reject: reject}.Fallback()) })

// zoneKind reads timezone into EventTime.Location: nil for UTC.
var zoneKind = simpleKind("string", func(v any) (*time.Location, string) {
	z, ok := v.(string)
	if !ok {
		return nil, "must be a string, not " + typeName(v)
	}
	if z == "UTC" {
		return nil, ""
	}
	loc, err := time.LoadLocation(z)
	if err != nil || z == "" || z == "Local" {
		return nil, fmt.Sprintf("%q is not an IANA time zone name, such as \"UTC\", \"Europe/Berlin\" or \"America/New_York\"", z)
	}
	return loc, ""
}, func(loc *time.Location) string { return tomlString(EventTime{Location: loc}.Zone()) })

// outputTime checks what the event time asks of the other keys: a
// time_source column is a timestamp or date column of [[output.columns]],
// and time_unit goes with a header.
func (c *checker) outputTime(t map[string]any, p keyPath, o *Output) {
	if key := p.key("time_source"); c.ok(key) && o.Time.Column != "" {
		src, name := o.Time.Source(), o.Time.Column
		why := ""
		switch i := slices.IndexFunc(o.Columns, func(col Column) bool { return col.Name == name }); {
		case i < 0:
			why = fmt.Sprintf("%q names no column of [[output.columns]]; declare it there with type timestamp or date", src)
		case o.Columns[i].Type != formats.TypeTimestamp && o.Columns[i].Type != formats.TypeDate:
			why = fmt.Sprintf("%q: column %s is %s, and an event time needs a timestamp or date column", src, name, o.Columns[i].Type)
		}
		if why != "" {
			c.report(key, "%s", why)
			c.fail(key)
			o.Time.Column = ""
		}
	}
	if key := p.key("time_unit"); has(t, "time_unit") && c.ok(key) && o.Time.Header == "" {
		c.report(key, "is the unit of a header's epoch numbers, and time_source is not a header; remove time_unit (a timestamp column has its own unit)")
		c.fail(key)
		o.Time.Unit = ""
	}
}

// checkTemplateColumns reports a {column:<name>} of the path template
// that names no typed column.
func (c *checker) checkTemplateColumns(p keyPath, o *Output) {
	if o.PathTemplate == nil {
		return
	}
	for _, name := range o.PathTemplate.Names(pathtemplate.VarColumn) {
		if !slices.ContainsFunc(o.Columns, func(col Column) bool { return col.Name == name }) {
			c.report(p.key("path_template"), "%q: {column:%s} names no column of [[output.columns]]; declare it there with its source and type", o.PathTemplate.String(), name)
		}
	}
}

// UsesContent reports whether a message's path depends on its payload or
// headers: an event time, or {column:<name>} or {header:<Name>} in the path
// template.
func (o *Output) UsesContent() bool {
	if !o.Time.Ingest() {
		return true
	}
	return o.PathTemplate != nil && (o.PathTemplate.Uses(pathtemplate.VarColumn) || o.PathTemplate.Uses(pathtemplate.VarHeader))
}
