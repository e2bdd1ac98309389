package pathtemplate

import "time"

// OwnDir is the folder, under a connector's prefix, of the objects jetlake
// keeps for itself. Query engines must not read it: it sits beside the
// table folders, and only data lives where tables read.
const OwnDir = "_jetlake"

// Kind is a kind of jetlake's own objects: the folder under OwnDir that
// holds them.
type Kind string

// The kinds of jetlake's own objects.
const (
	Lost     Kind = "lost"     // loss markers: sequences that could not be exported
	Rejected Kind = "rejected" // messages a typed column refused, as JSON Lines
	Probe    Kind = "probe"    // conditional-write probes of plan and run
)

// LostExt is the extension of a loss marker.
const LostExt = "lost.json"

// OwnPrefix returns the key prefix of all of jetlake's own objects under
// prefix, a connector's key prefix: "<prefix>/_jetlake/", or "_jetlake/"
// when prefix is empty.
func OwnPrefix(prefix string) string {
	b := appendPrefix(nil, prefix)
	b = append(b, OwnDir...)
	return string(append(b, '/'))
}

// KindPrefix returns the key prefix of jetlake's own objects of kind k
// under prefix: "<prefix>/_jetlake/<k>/".
func KindPrefix(prefix string, k Kind) string {
	b := appendPrefix(nil, prefix)
	b = appendKindDir(b, k)
	return string(append(b, '/'))
}

// StreamPrefix returns the key prefix of one stream's loss markers or
// rejected messages under prefix: "<prefix>/_jetlake/<k>/<stream>/", the
// stream escaped as AppendEscaped escapes a template value.
func StreamPrefix(prefix string, k Kind, stream string) string {
	b := appendPrefix(nil, prefix)
	b = appendKindDir(b, k)
	b = append(b, '/')
	b = AppendEscaped(b, stream)
	return string(append(b, '/'))
}

// LostKey returns the key of a loss marker for the sequences first to last
// of stream, detected at detected:
// "<prefix>/_jetlake/lost/<stream>/<date>/<first:020>-<last:020>.lost.json",
// with the stream escaped as AppendEscaped escapes it and the date of
// detected in UTC, as yyyy-mm-dd.
func LostKey(prefix, stream string, detected time.Time, first, last uint64) string {
	dir := make([]byte, 0, 64)
	dir = appendDatedDir(dir, Lost, stream, detected)
	return string(AppendKey(nil, prefix, dir, first, last, LostExt))
}

// AppendRejectedDir appends to dst the directory, under a connector's
// prefix, of the messages of stream that a typed column rejected and that
// have timestamp t: "_jetlake/rejected/<stream>/<date>", with the stream
// escaped as AppendEscaped escapes it and the date of t in UTC, as
// yyyy-mm-dd. The objects in it are named as AppendKey names data objects.
func AppendRejectedDir(dst []byte, stream string, t time.Time) []byte {
	return appendDatedDir(dst, Rejected, stream, t)
}

// ProbeKey returns the key of a conditional-write probe object:
// "<prefix>/_jetlake/probe/<name>-<id>", with name escaped as AppendEscaped
// escapes a template value. name says whose probe it is (a connector's name,
// and who writes it); id makes the key new and is written as it is, so it
// should hold only [A-Za-z0-9].
func ProbeKey(prefix, name, id string) string {
	b := appendPrefix(nil, prefix)
	b = appendKindDir(b, Probe)
	b = append(b, '/')
	b = AppendEscaped(b, name)
	b = append(b, '-')
	return string(append(b, id...))
}

// appendPrefix appends "<prefix>/", or nothing for an empty prefix.
func appendPrefix(dst []byte, prefix string) []byte {
	if prefix == "" {
		return dst
	}
	dst = append(dst, prefix...)
	return append(dst, '/')
}

// appendKindDir appends "_jetlake/<k>".
func appendKindDir(dst []byte, k Kind) []byte {
	dst = append(dst, OwnDir...)
	dst = append(dst, '/')
	return append(dst, k...)
}

// appendDatedDir appends "_jetlake/<k>/<stream>/<date>", the stream escaped
// and the date of t in UTC.
func appendDatedDir(dst []byte, k Kind, stream string, t time.Time) []byte {
	dst = appendKindDir(dst, k)
	dst = append(dst, '/')
	dst = AppendEscaped(dst, stream)
	dst = append(dst, '/')
	return t.UTC().AppendFormat(dst, "2006-01-02")
}
