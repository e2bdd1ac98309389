package config

import (
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

// outputTime checks time_source, time_fallback, time_unit and timezone
// against the typed columns o already holds.
func (c *checker) outputTime(t map[string]any, p keyPath, o *outputCheck) {
	et := &o.Time
	if src, ok := c.str(t, p, "time_source", TimeSourceIngest); ok {
		c.timeSource(p.key("time_source"), src, o)
	}
	if f, ok := c.str(t, p, "time_fallback", TimeFallbackIngest); ok {
		switch f {
		case TimeFallbackIngest:
		case TimeFallbackReject:
			et.Reject = true
		default:
			c.report(p.key("time_fallback"), "%q is not a fallback; allowed: ingest (the JetStream timestamp, counted in jetlake_event_time_fallback_total), reject (the message goes to the rejected objects with the reason)", f)
		}
	}
	if u, ok := c.str(t, p, "time_unit", ""); ok && has(t, "time_unit") {
		switch {
		case et.Header == "":
			c.report(p.key("time_unit"), "is the unit of a header's epoch numbers, and time_source is not a header; remove time_unit (a timestamp column has its own unit)")
		case !slices.Contains([]string{"s", "ms", "us", "ns"}, u):
			c.report(p.key("time_unit"), "%q is not a unit; allowed: s, ms, us, ns", u)
		default:
			et.Unit = u
		}
	}
	if z, ok := c.str(t, p, "timezone", "UTC"); ok && z != "UTC" {
		loc, err := time.LoadLocation(z)
		if err != nil || z == "" || z == "Local" {
			c.report(p.key("timezone"), "%q is not an IANA time zone name, such as \"UTC\", \"Europe/Berlin\" or \"America/New_York\"", z)
		} else {
			et.Location = loc
		}
	}
}

// timeSource checks time_source, src: ingest, a timestamp or date column,
// or a header.
func (c *checker) timeSource(k keyPath, src string, o *outputCheck) {
	kind, name, _ := strings.Cut(src, ":")
	switch {
	case src == TimeSourceIngest:
	case kind == "column" && name != "":
		i := slices.IndexFunc(o.Columns, func(col Column) bool { return col.Name == name })
		switch {
		case i < 0:
			c.report(k, "%q names no column of [[output.columns]]; declare it there with type timestamp or date", src)
		case o.Columns[i].Type != formats.TypeTimestamp && o.Columns[i].Type != formats.TypeDate:
			c.report(k, "%q: column %s is %s, and an event time needs a timestamp or date column", src, name, o.Columns[i].Type)
		default:
			o.Time.Column = name
		}
	case kind == "header" && name != "" && !strings.ContainsAny(name, " :\t"):
		o.Time.Header = name
	default:
		c.report(k, "%q is not a time source; allowed: ingest (the JetStream timestamp), column:<name> (a timestamp or date column of [[output.columns]]), header:<Name> (a header holding RFC 3339, or an epoch number with time_unit)", src)
	}
}

// checkTemplateColumns reports a {column:<name>} of the path template
// that names no typed column.
func (c *checker) checkTemplateColumns(p keyPath, o *outputCheck) {
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
