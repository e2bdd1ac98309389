package config

import (
	"slices"
	"strings"
)

// Subject filters are NATS subjects whose tokens may be '*' (any one token)
// or, as the last token, '>' (one or more tokens). These functions take
// valid filters and subjects (see checkSubject) and are the one place
// jetlake decides how they relate.

// SubjectMatches reports whether the concrete subject matches filter.
func SubjectMatches(filter, subject string) bool {
	return SubjectWithin(subject, filter)
}

// SubjectWithin reports whether every subject that matches inner also
// matches outer. With a concrete inner, that is whether inner matches
// outer.
func SubjectWithin(inner, outer string) bool {
	in, out := strings.Split(inner, "."), strings.Split(outer, ".")
	for i := range in {
		switch {
		case i >= len(out):
			return false
		case out[i] == ">":
			return true
		case in[i] == ">":
			return false
		case out[i] == "*":
		case in[i] == "*" || in[i] != out[i]:
			return false
		}
	}
	return len(in) == len(out)
}

// SubjectsOverlap reports whether some subject matches both filters a and b.
func SubjectsOverlap(a, b string) bool {
	ta, tb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; ; i++ {
		switch {
		case i == len(ta) || i == len(tb):
			return len(ta) == len(tb)
		case ta[i] == ">" || tb[i] == ">":
			return true
		case ta[i] != tb[i] && ta[i] != "*" && tb[i] != "*":
			return false
		}
	}
}

// FiltersCover reports whether a consumer with filters receives every
// message of a stream with streamSubjects: then every stream sequence is
// delivered to it, and a sequence it skips was removed from the stream.
// No filters, or '>', is the whole stream. A stream without subjects of
// its own (a mirror, or one with sources only) may hold any subject, so
// only those cover it.
func FiltersCover(filters, streamSubjects []string) bool {
	if len(filters) == 0 || slices.Contains(filters, ">") {
		return true
	}
	if len(streamSubjects) == 0 {
		return false
	}
	for _, s := range streamSubjects {
		if !slices.ContainsFunc(filters, func(f string) bool { return SubjectWithin(s, f) }) {
			return false
		}
	}
	return true
}

// ExampleSubject turns filter into a concrete subject that matches it, for
// sample object keys: each wildcard becomes the token "example".
func ExampleSubject(filter string) string {
	toks := strings.Split(filter, ".")
	for i, t := range toks {
		if t == "*" || t == ">" {
			toks[i] = "example"
		}
	}
	return strings.Join(toks, ".")
}
