package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Each check returns "" when the value is valid, or what is wrong with it and
// what is allowed, worded to follow the value in a problem message.

// maxNameLen is the longest stream or consumer name JetStream accepts.
const maxNameLen = 255

func checkConnectorName(s string) string {
	if s == "" || len(s) > maxNameLen {
		return fmt.Sprintf("must be 1 to %d letters, digits, '_' or '-'", maxNameLen)
	}
	for i := 0; i < len(s); i++ {
		if !isBareKeyByte(s[i]) {
			return "may hold only letters, digits, '_' and '-'"
		}
	}
	return ""
}

// checkJetStreamName checks a stream or consumer name.
func checkJetStreamName(s string) string {
	const allowed = "must not be empty or hold whitespace, control characters, '.', '*', '>', '/' or '\\'"
	if s == "" {
		return allowed
	}
	if len(s) > maxNameLen {
		return fmt.Sprintf("is longer than %d bytes", maxNameLen)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(".*>/\\", r) || r == utf8.RuneError {
			return allowed
		}
	}
	return ""
}

// checkSubject checks a consumer filter subject.
func checkSubject(s string) string {
	const allowed = "a subject is tokens separated by '.', with no empty token and no whitespace; '*' and '>' are whole tokens and '>' only the last"
	if s == "" {
		return allowed
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError {
			return allowed
		}
	}
	tokens := strings.Split(s, ".")
	for i, t := range tokens {
		switch {
		case t == "":
			return allowed
		case t == ">" && i != len(tokens)-1:
			return allowed
		case t != "*" && t != ">" && strings.ContainsAny(t, "*>"):
			return allowed
		}
	}
	return ""
}

// checkBucket checks an S3 bucket name the way minio-go does.
func checkBucket(s string) string {
	const allowed = "use 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit"
	if len(s) < 3 || len(s) > 63 {
		return allowed
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return allowed
		}
	}
	if !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return allowed
	}
	if strings.Contains(s, "..") || strings.Contains(s, ".-") || strings.Contains(s, "-.") {
		return "it must not hold \"..\", \".-\" or \"-.\""
	}
	if net.ParseIP(s) != nil {
		return "it must not be an IP address"
	}
	return ""
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// checkEnvName checks the name of an environment variable.
func checkEnvName(s string) string {
	const allowed = "must name an environment variable: a letter or '_' followed by letters, digits or '_'"
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return allowed
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return allowed
		}
	}
	return ""
}

// looksLikeAccessKeyID reports whether s has the shape of an AWS access key
// id, which someone may have written where the name of a variable belongs.
func looksLikeAccessKeyID(s string) bool {
	if len(s) != 20 || !strings.HasPrefix(s, "AKIA") && !strings.HasPrefix(s, "ASIA") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
			return false
		}
	}
	return true
}

// RedactURL returns s with its secrets replaced by "REDACTED", so that a
// message or log line never repeats one: the user information of a URL (a
// user and password, or a token in the user's place), and its whole query
// and fragment (a PostgreSQL URI may carry password= or sslpassword=
// there, a REST catalog's URL a token). It works on the text, not on a
// parsed URL, so that a URL that does not parse, or parses differently in
// the client that uses it, is redacted as well: user information ends at
// the last '@' before the query, or at an '@' before the first '/' after
// the scheme, as PostgreSQL's drivers read it.
//
// Every URL jetlake prints or logs (server lists, endpoints, catalog URIs)
// goes through RedactURL.
func RedactURL(s string) string {
	prefix, rest := "", s
	if i := strings.Index(s, "://"); i >= 0 {
		prefix, rest = s[:i+len("://")], s[i+len("://"):]
	}
	q := strings.IndexAny(rest, "?#")
	at := strings.LastIndexByte(rest, '@')
	if q >= 0 && at > q {
		// The '@' is after a '?': in the query, or ending user
		// information that holds a '?' when no '/' comes before it.
		at = -1
		if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
			at = i
		}
	}
	if at >= 0 {
		rest = "REDACTED" + rest[at:]
	}
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		rest = rest[:q+1] + "REDACTED"
	}
	return prefix + rest
}

// checkNATSURLs checks a comma-separated list of server URLs.
func checkNATSURLs(list string) string {
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		switch {
		case s == "":
			return "has an empty entry; give server URLs separated by commas, such as \"nats://a:4222,nats://b:4222\""
		case err != nil || u.Host == "" || u.Hostname() == "" || u.Opaque != "":
			return fmt.Sprintf("%q is not a server URL; write scheme://host:port with scheme nats, tls, ws or wss, such as \"nats://127.0.0.1:4222\"", RedactURL(s))
		case u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss":
			return fmt.Sprintf("%q has scheme %q; allowed: nats, tls, ws, wss", RedactURL(s), u.Scheme)
		case u.User != nil:
			return fmt.Sprintf("%q holds credentials; secrets are never read from the file: use user with password_env, token_env, creds_file or nkey_seed_file", RedactURL(s))
		}
	}
	return ""
}

// plainRemoteURL returns the first URL of a valid server list that connects
// without TLS (nats:// or ws://) to a host that is not a loopback address,
// or "" when there is none.
func plainRemoteURL(list string) string {
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		if err == nil && (u.Scheme == "nats" || u.Scheme == "ws") && !isLoopback(u.Hostname()) {
			return s
		}
	}
	return ""
}

// checkEndpoint checks the URL of an S3-compatible server.
func checkEndpoint(s string) string {
	u, err := url.Parse(s)
	const allowed = "must be an http:// or https:// URL with a host and no path, such as \"http://127.0.0.1:9000\"; leave endpoint out for AWS S3"
	switch {
	case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" || u.Opaque != "":
		return allowed
	case u.User != nil:
		return "must not hold credentials; secrets are never read from the file: use access_key_id_env and secret_access_key_env"
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
		return allowed
	}
	return ""
}

// checkRegion checks an S3 region name. S3-compatible servers accept names
// AWS does not use, so only the characters are checked.
func checkRegion(s string) string {
	if s == "" {
		return "must not be empty; leave region out for \"us-east-1\""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "may hold only letters, digits, '-' and '_', such as \"us-east-1\""
		}
	}
	return ""
}

// checkPrefix checks the key prefix of every object a connector writes.
func checkPrefix(s string) string {
	if s == "" {
		return ""
	}
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
		return "must not start or end with '/'; write \"raw/events\", not \"/raw/events/\""
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\\' {
			return "must not hold control characters or '\\'"
		}
	}
	for _, seg := range strings.Split(s, "/") {
		switch seg {
		case "":
			return "must not hold \"//\" (an empty segment)"
		case ".", "..":
			return "must not have a \".\" or \"..\" segment"
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b, for suggesting the
// key that was meant.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// CheckFilter checks a subject filter given outside a connector file (a
// command's flag): nil, or an error saying what a filter is.
func CheckFilter(s string) error {
	if why := checkSubject(s); why != "" {
		return errors.New(why)
	}
	return nil
}
