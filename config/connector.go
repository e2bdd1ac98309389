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

func (c *checker) connector(top map[string]any) *Connector {
	var root keyPath
	c.unknown(top, root, &topSpec)
	conn := &Connector{File: c.file}

	if !has(top, "name") {
		c.report(root.key("name"), "missing; every connector needs a name of letters, digits, '_' and '-', such as \"events\"")
	} else if name, ok := c.str(top, root, "name", ""); ok {
		if why := checkConnectorName(name); why != "" {
			c.report(root.key("name"), "%q %s", name, why)
		} else {
			conn.Name = name
		}
	}
	conn.Enabled, _ = c.boolean(top, root, "enabled", true)
	if d, ok := c.duration(top, root, "shutdown_timeout", defaultShutdownTimeout); ok && d <= 0 {
		c.report(root.key("shutdown_timeout"), "must be more than 0, such as \"30s\"")
	} else {
		conn.ShutdownTimeout = d
	}

	if d, ok := c.duration(top, root, "ready_upload_failure", defaultReadyUploadFailure); ok && d <= 0 {
		c.report(root.key("ready_upload_failure"), "must be more than 0, such as \"1m\"")
	} else {
		conn.ReadyUploadFailure = d
	}
	if t, p, ok := c.table(top, root, &natsSpec); ok {
		conn.NATS = c.nats(t, p)
	}
	if t, p, ok := c.table(top, root, &stateSpec); ok {
		conn.State = c.state(t, p)
	}
	s3ok := false
	if t, p, ok := c.table(top, root, &s3Spec); ok {
		conn.S3, s3ok = c.s3(t, p)
	}
	out := outputCheck{}
	if t, p, ok := c.table(top, root, &outputSpec); ok {
		out = c.output(t, p)
		conn.Output = out.Output
	}
	rot := rotationCheck{}
	if t, p, ok := c.table(top, root, &rotationSpec); ok {
		rot = c.rotation(t, p)
		conn.Rotation = rot.Rotation
	}
	conn.Streams = c.streams(top, conn.Name, rot)
	if t, p, ok := c.table(top, root, &icebergSpec); ok && has(top, "iceberg") {
		conn.Iceberg = c.iceberg(t, p, conn.Name)
		if conn.Iceberg.Region == "" {
			conn.Iceberg.Region = conn.S3.Region
		}
		outT, _ := top["output"].(map[string]any)
		c.checkIceberg(out, outT, conn.Iceberg)
	}

	c.checkTemplate(conn, out, s3ok)
	return conn
}

// checkTemplate checks that the path template suits the streams and that
// every object key it renders fits in S3's key length limit.
func (c *checker) checkTemplate(conn *Connector, out outputCheck, s3ok bool) {
	tpl := out.PathTemplate
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

	if !s3ok {
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
		if !out.templateSet {
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

// envName returns the environment variable name at key, "" when it is
// absent, empty or invalid.
func (c *checker) envName(t map[string]any, p keyPath, key string) string {
	s, ok := c.str(t, p, key, "")
	if !ok || s == "" {
		return ""
	}
	if looksLikeAccessKeyID(s) {
		c.report(p.key(key), "looks like an access key id, not the name of an environment variable; %sname the variable that holds it", neverSecrets)
		return ""
	}
	if why := checkEnvName(s); why != "" {
		// The value is not repeated: it may be the secret itself, pasted
		// where the name of its variable belongs.
		c.report(p.key(key), "%s (the value is not shown, in case it is a secret pasted in; secrets are never read from the file)", why)
		return ""
	}
	return s
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
