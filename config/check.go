package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// checker walks the decoded TOML of one file, collecting problems.
type checker struct {
	file  string
	lines *lineIndex
	probs Errors
}

func (c *checker) report(p keyPath, format string, args ...any) {
	c.probs = append(c.probs, &Problem{
		File: c.file,
		Line: c.lines.line(p),
		Key:  p.String(),
		Msg:  fmt.Sprintf(format, args...),
	})
}

// syntaxProblem turns a decoding error into a problem.
func syntaxProblem(file string, err error) *Problem {
	line, msg := 1, err.Error()
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line, msg = max(pe.Position.Line, 1), pe.Message
	}
	// The message may quote the offending input, line breaks included; a
	// problem is one line.
	msg = strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(msg)
	return &Problem{File: file, Line: line, Key: "toml", Msg: "syntax error: " + msg}
}

// unknown reports every key of t, the table at p, that sp does not allow.
func (c *checker) unknown(t map[string]any, p keyPath, sp *spec) {
	for _, k := range sortedKeys(t) {
		if sp.allows(k) {
			continue
		}
		if msg, ok := sp.secrets[k]; ok {
			c.report(p.key(k), "%s", msg)
			continue
		}
		c.report(p.key(k), "unknown key%s; allowed keys %s: %s", suggest(k, sp), sp.where, strings.Join(sp.names(), ", "))
	}
}

// suggest names the table an unknown key belongs in, or an allowed key it
// is a misspelling of.
func suggest(k string, sp *spec) string {
	for _, other := range allSpecs {
		if other != sp && other.allows(k) {
			return fmt.Sprintf(" here (%s belongs %s)", k, other.where)
		}
	}
	best, bestDist := "", 3
	for _, allowed := range sp.names() {
		if d := editDistance(strings.ToLower(k), allowed); d < bestDist && d < len(allowed)/2 {
			best, bestDist = allowed, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return ""
}

func sortedKeys(t map[string]any) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// typeName names the TOML type of a decoded value.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date-time"
}

func has(t map[string]any, key string) bool {
	_, ok := t[key]
	return ok
}

// The getters below return def when key is absent from t, the table at p.
// They return false after reporting a value of the wrong type or form.

// table returns the table sp describes, an empty one when it is absent.
func (c *checker) table(t map[string]any, p keyPath, sp *spec) (map[string]any, keyPath, bool) {
	p = p.key(sp.name)
	v, ok := t[sp.name]
	if !ok {
		return map[string]any{}, p, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.report(p, "must be a table, not %s; write the keys under a %s header", typeName(v), sp.header)
		return nil, p, false
	}
	return m, p, true
}

func (c *checker) str(t map[string]any, p keyPath, key, def string) (string, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	s, ok := v.(string)
	if !ok {
		c.report(p.key(key), "must be a string, not %s", typeName(v))
		return def, false
	}
	return s, true
}

func (c *checker) boolean(t map[string]any, p keyPath, key string, def bool) (bool, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	b, ok := v.(bool)
	if !ok {
		c.report(p.key(key), "must be true or false, not %s", typeName(v))
		return def, false
	}
	return b, true
}

func (c *checker) integer(t map[string]any, p keyPath, key string, def int64) (int64, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	n, ok := v.(int64)
	if !ok {
		c.report(p.key(key), "must be a whole number, not %s", typeName(v))
		return def, false
	}
	return n, true
}

func (c *checker) duration(t map[string]any, p keyPath, key string, def time.Duration) (time.Duration, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	s, ok := v.(string)
	if !ok {
		c.report(p.key(key), "must be a duration string such as \"90s\" or \"2m\", not %s", typeName(v))
		return def, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.report(p.key(key), "%q is not a duration; write a number and a unit (ms, s, m, h), such as \"90s\" or \"2m\"", s)
		return def, false
	}
	return d, true
}

func (c *checker) size(t map[string]any, p keyPath, key string, def int64) (int64, bool) {
	v, ok := t[key]
	if !ok {
		return def, true
	}
	switch v := v.(type) {
	case int64:
		return v, true
	case string:
		n, err := parseSize(v)
		if err != nil {
			c.report(p.key(key), "%q is not a size: %v; such as \"8MiB\"", v, err)
			return def, false
		}
		return n, true
	}
	c.report(p.key(key), "must be a size such as \"8MiB\", not %s", typeName(v))
	return def, false
}

func (c *checker) stringList(t map[string]any, p keyPath, key string) ([]string, bool) {
	v, ok := t[key]
	if !ok {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		c.report(p.key(key), "must be an array of strings such as [\"events.>\"], not %s", typeName(v))
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			c.report(p.key(key), "must be an array of strings such as [\"events.>\"]; it holds %s", typeName(e))
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// FormatDuration formats d as a connector file writes it, without zero
// minutes or seconds: "2m", not "2m0s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
