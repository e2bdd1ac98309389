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
	conn  *Connector      // the connector being decoded, for defaults taken from its other keys
	bad   map[string]bool // the keys (keyPath.String()) without a usable value
	stray map[string]bool // the keys (keyPath.String()) their tables do not allow
}

// report records a problem with the key at p.
func (c *checker) report(p keyPath, format string, args ...any) {
	c.probs = append(c.probs, &Problem{
		File: c.file,
		Line: c.lines.line(p),
		Key:  p.String(),
		Msg:  fmt.Sprintf(format, args...),
	})
}

// fail records that the key at p has no usable value: it is missing, or
// its value is of the wrong type, or failed its check, or a cross-check
// refused it. The cross-checks leave such keys alone.
func (c *checker) fail(p keyPath) {
	if c.bad == nil {
		c.bad = make(map[string]bool)
	}
	c.bad[p.String()] = true
}

// ok reports whether the key at p has a usable value (or its default).
func (c *checker) ok(p keyPath) bool { return !c.bad[p.String()] }

// clean reports whether no problem so far is about the key or table at p
// or anything in it, besides keys the table does not allow (which are
// left out of it).
func (c *checker) clean(p keyPath) bool {
	at := p.String()
	for _, prob := range c.probs {
		if k := prob.Key; !c.stray[k] && (k == at || strings.HasPrefix(k, at+".") || strings.HasPrefix(k, at+"[")) {
			return false
		}
	}
	return true
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
		if c.stray == nil {
			c.stray = make(map[string]bool)
		}
		c.stray[p.key(k).String()] = true
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
