package config

import (
	"net"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Defaults and limits of connector settings.
const (
	defaultShutdownTimeout    = 30 * time.Second
	defaultReadyUploadFailure = time.Minute
	defaultPriorityTimeout    = 30 * time.Second
	defaultLeaseTTL           = 30 * time.Second
	minLeaseTTL               = 2 * time.Second
	defaultRegion             = "us-east-1"
	defaultUploadConcurrency  = 4
	defaultPathTemplate       = "{stream}/{subject}/{date}/{hour}"
	defaultAckWait            = 2 * time.Minute
	defaultMaxFileSize        = 8 * mib
	defaultMaxMessagesPerFile = 10000
	defaultMaxFileAge         = time.Minute
	defaultMaxBufferedBytes   = 256 * mib
	defaultRowGroupSize       = 64 * mib
	defaultMaxOpenDirectories = 4096

	minAckWait            = 10 * time.Second
	maxUploadConcurrency  = 64
	minFileSize           = kib
	maxFileSize           = 5 * gib // the largest object a single S3 PutObject stores
	minRowGroupSize       = mib
	maxRowGroupSize       = gib
	maxMessagesPerFile    = 10_000_000
	maxOpenDirectories    = 10_000_000
	minDerivedAckPending  = 1000
	maxDerivedAckPending  = MaxDerivedAckPending
	derivedAckPendingUnit = 256 // bytes of max_buffered_bytes per pending message
)

// maxObjectName is the longest object name after the directory, with the
// "/" before it: the sequence range pathtemplate names objects by, a "."
// and an extension, which is at most maxExtLen bytes for every format and
// compression.
const (
	maxExtLen     = 16
	maxObjectName = 1 + pathtemplate.RangeLen + 1 + maxExtLen
)

// parse parses and checks one file. It returns the connector, filled in as
// far as the file allowed even when there are problems, and the lines of
// its keys; both are nil after a syntax error.
func parse(file string, src []byte) (*Connector, *lineIndex, Errors) {
	var raw map[string]any
	if _, err := toml.Decode(string(src), &raw); err != nil {
		return nil, nil, Errors{syntaxProblem(file, err)}
	}
	c := &checker{file: file, lines: locate(string(src))}
	conn := c.connector(raw)
	sortProblems(c.probs)
	return conn, c.lines, c.probs
}

// connector decodes the top level of a file: its rows, which decode the
// tables in turn, and then the cross-checks that relate the tables.
func (c *checker) connector(top map[string]any) *Connector {
	conn := &Connector{File: c.file}
	c.conn = conn
	c.rows(top, nil, &topSpec, conn)
	c.streamsCrossChecks(top, conn)
	if conn.Iceberg != nil {
		outT, _ := top["output"].(map[string]any)
		c.icebergOutputCrossChecks(conn.Output, outT, conn.Iceberg)
	}
	c.templateCrossChecks(top, conn)
	return conn
}

// templateCrossChecks checks that the path template suits the streams,
// and that every object key it renders fits in S3's key length limit with
// the prefix.
func (c *checker) templateCrossChecks(top map[string]any, conn *Connector) {
	tpl := conn.Output.PathTemplate
	if tpl == nil {
		return
	}
	key := keyPath{}.key("output").key("path_template")

	var names []string
	for _, s := range conn.Streams {
		if s.Stream != "" && !slices.Contains(names, s.Stream) {
			names = append(names, s.Stream)
		}
	}
	if len(names) > 1 && !tpl.Uses(pathtemplate.VarStream) {
		c.report(key, "%q does not use {stream}, but the connector reads streams %s: their sequence numbers overlap, so object names would collide; add {stream} to the template", tpl.String(), strings.Join(names, ", "))
	}

	if !c.clean(keyPath{}.key("s3")) {
		return
	}
	longest, dir := 0, 0
	for _, s := range conn.Streams {
		dir = max(dir, maxDirLen(tpl, s))
		n := maxObjectName + dir
		if conn.S3.Prefix != "" {
			n += len(conn.S3.Prefix) + 1
		}
		longest = max(longest, n)
	}
	if longest > pathtemplate.MaxKeyLen {
		outT, _ := top["output"].(map[string]any)
		if !has(outT, "path_template") {
			key = keyPath{}.key("s3").key("prefix")
		}
		c.report(key, "object keys may be %d bytes long (prefix %d, directory up to %d, object name up to %d), more than S3's limit of %d; shorten s3.prefix or the literal text of output.path_template",
			longest, len(conn.S3.Prefix), dir, maxObjectName, pathtemplate.MaxKeyLen)
	}
}

// maxDirLen is the longest directory tpl renders for stream s: the stream and
// consumer names are known, a subject may render to MaxValueLen bytes.
func maxDirLen(tpl *pathtemplate.Template, s Stream) int {
	return tpl.MaxDirLen(s.Stream, s.Consumer)
}

// join lists values for a message: "a, b, c".
func join[S ~string](values []S) string {
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(v))
	}
	return b.String()
}

// envName checks the name of an environment variable written where a
// secret would go: "" is none.
func envName(s string) string {
	switch {
	case s == "":
		return ""
	case looksLikeAccessKeyID(s):
		return "looks like an access key id, not the name of an environment variable; " + neverSecrets + "name the variable that holds it"
	}
	if why := checkEnvName(s); why != "" {
		// The value is not repeated: it may be the secret itself, pasted
		// where the name of its variable belongs.
		return why + " (the value is not shown, in case it is a secret pasted in; secrets are never read from the file)"
	}
	return ""
}

// envField binds a key that names the environment variable holding a
// secret to the field at ptr.
func envField[S any](ptr func(*S) *string) *field[S, string] {
	return text(ptr).checked(envName).naming(namesEnv)
}

// fileField binds a key that names a file to the field at ptr.
func fileField[S any](ptr func(*S) *string) *field[S, string] {
	return text(ptr).naming(namesFile)
}

// checkToken checks a name made of letters, digits, '_' and '-'.
func checkToken(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "may hold only letters, digits, '_' and '-'"
		}
	}
	return ""
}

// isLoopback reports whether host names this machine: plain HTTP to it
// never crosses a network.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// MaxDerivedAckPending is the highest max_ack_pending jetlake derives from
// the rotation limits.
const MaxDerivedAckPending = 250_000
