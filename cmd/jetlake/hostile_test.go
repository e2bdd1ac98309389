package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// hostileSeedEnv names the variable that replays the hostile-message test:
// set it to the seed a failed run logged.
const hostileSeedEnv = "JETLAKE_HOSTILE_SEED"

// hostilePerKind is how many messages each kind of connector is sent.
const hostilePerKind = 2000

// hostileUntilIdle bounds run -until-idle: a few thousand messages take
// seconds; a message that stops or slows the export makes it run out.
const hostileUntilIdle = 100 * time.Second

// hostileKind is a kind of connector the hostile messages go through.
type hostileKind struct {
	name    string                 // subtest, and stream and bucket name with "hostile-" before it
	stream  jetstream.StreamConfig // beyond name and subjects
	entry   string                 // keys of the [[streams]] entry beyond stream and ack_wait
	output  string                 // [output], its columns and, for a table, [iceberg]
	iceberg bool
}

// hostileColumns are every column type over the fields the generator
// draws into, with a timestamp in epoch milliseconds.
const hostileColumns = `
[[output.columns]]
name = "tenant"
source = "tenant"
type = "string"

[[output.columns]]
name = "created_at"
source = "created_at"
type = "timestamp"
unit = "ms"

[[output.columns]]
name = "amount"
source = "amount"
type = "int64"

[[output.columns]]
name = "small"
source = "small"
type = "int32"

[[output.columns]]
name = "score"
source = "score"
type = "double"

[[output.columns]]
name = "ok"
source = "ok"
type = "boolean"

[[output.columns]]
name = "day"
source = "day"
type = "date"

[[output.columns]]
name = "doc"
source = "doc"
type = "json"
`

var hostileKinds = []hostileKind{
	{
		// Paths from a payload field and a header, an event time from the
		// payload, rejected when it is unusable; a stream that takes
		// per-message TTLs (drawn long: nothing expires).
		name:   "files",
		stream: jetstream.StreamConfig{AllowMsgTTL: true},
		output: `[output]
format = "json_lines"
include_headers = true
path_template = "{stream}/{date}/{column:tenant}/region={header:Region}/{subject:2}/{hour}"
time_source = "column:created_at"
time_fallback = "reject"
` + hostileColumns,
	},
	{
		// Active/standby through a pinned consumer, parquet with every
		// column type, a type error rejects.
		name:  "pinned",
		entry: "failover = \"pinned\"\npriority_timeout = \"5s\"\n",
		output: `[output]
format = "parquet"
include_headers = true
on_type_error = "reject"
path_template = "{stream}/{subject}/{date}/{hour}"
` + hostileColumns,
	},
	{
		// Three partitions, files by path from a header, the event time
		// from another header in epoch seconds, falling back to ingest.
		name:  "partitioned",
		entry: "partitions = 3\nlease_ttl = \"3s\"\npriority_timeout = \"5s\"\n",
		output: `[output]
format = "json_lines"
compression = "gzip"
include_headers = true
group_by = "path"
path_template = "{stream}/{header:Region}/{year}/{month}/{day}/{hour}"
time_source = "header:Event-Time"
time_unit = "s"
time_fallback = "ingest"
` + hostileColumns,
	},
	{
		// An Iceberg table partitioned by typed columns, through a sqlite
		// catalog; a type error makes the column null.
		name:    "iceberg",
		iceberg: true,
		output: `[output]
format = "parquet"
on_type_error = "null"
` + hostileColumns + `
[iceberg]
uri = "sqlite://%CATALOG%"
namespace = "lake"
table = "hostile"
commit_interval = "1s"
partitioning = ["day(created_at)", "tenant", "bucket(amount, 4)"]
`,
	},
}

// hostileSeed returns the seed of the hostile messages, $JETLAKE_HOSTILE_SEED
// or one from the clock, and logs it so that a failure can be replayed.
func hostileSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(hostileSeedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s: %v", hostileSeedEnv, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, hostileSeedEnv, seed)
	return seed
}

// Whoever can publish to a stream controls payloads, headers, event times
// and how many distinct values a path takes. A few thousand hostile
// messages, good ones among them, go through a real nats-server to each
// kind of connector, and:
//   - run -until-idle ends, with exit 0, within a bound;
//   - every message the stream stored is in exactly one data object (or
//     data file of the table) or one rejected object that says why;
//   - no object lands outside the connector's prefix, and under
//     <prefix>/_jetlake/ there are only jetlake's own objects;
//   - verify -deep passes, and every good message is in a data object.
//
// A failure names the seed; JETLAKE_HOSTILE_SEED replays it.
func TestHostileMessagesNeitherStopNorMisdirectAnExport(t *testing.T) {
	exportertest.SkipShort(t)
	t.Parallel()
	seed := hostileSeed(t)
	for i, k := range hostileKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			h := newHostileEnv(t, k, seed+uint64(i))
			h.publish(hostilePerKind)
			h.runUntilIdle()
			h.check()
		})
	}
}

// hostileEnv is one kind's stream, bucket, connector and what was
// published.
type hostileEnv struct {
	t       *testing.T
	kind    hostileKind
	seed    uint64
	name    string // stream (upper case), bucket, subject prefix, connector
	file    string
	catalog string // the sqlite catalog of a table
	c       *crashEnv
	msgs    []hostileMsg
	stored  map[uint64]int    // stream sequence → index in msgs
	refused map[string]int    // publishes the server refused, by its error
	dups    int               // publishes the server took for duplicates
	runLog  string            // what run -until-idle wrote
	runTook time.Duration     // how long it ran
	runErr  error             // its exit
	summary map[string]string // figures for the log
}

func newHostileEnv(t *testing.T, k hostileKind, seed uint64) *hostileEnv {
	t.Helper()
	name := "hostile-" + k.name
	h := &hostileEnv{t: t, kind: k, seed: seed, name: name, stored: map[uint64]int{}, refused: map[string]int{}, summary: map[string]string{}}
	h.c = newCrashEnv(t, name, shared.NATS(t), shared.MinIO(t), k.stream)
	output := k.output
	if k.iceberg {
		h.catalog = filepath.Join(t.TempDir(), "catalog.db")
		output = strings.ReplaceAll(output, "%CATALOG%", h.catalog)
	}
	h.file = writeFile(t, name+".toml", fmt.Sprintf(`name = %[1]q
shutdown_timeout = "10s"
[nats]
url = %[2]q
[[streams]]
stream = %[3]q
ack_wait = "15s"
%[5]s[s3]
bucket = %[1]q
endpoint = %[4]q
prefix = "lake"
[rotation]
max_messages_per_file = 300
max_file_age = "2s"
%[6]s`, name, h.c.nats.URL, strings.ToUpper(name), h.c.minio.Endpoint, k.entry, output))
	h.c.file = h.file
	return h
}

// fail reports a broken property, with the seed that replays it.
func (h *hostileEnv) fail(format string, args ...any) {
	h.t.Helper()
	h.t.Errorf("seed %d, %s connector: %s", h.seed, h.kind.name, fmt.Sprintf(format, args...))
}

// publish sends n generated messages and learns from the acknowledgements
// which of them the stream stored, at which sequence.
func (h *hostileEnv) publish(n int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := newHostileGen(h.seed, h.name, time.Now().UTC().Truncate(time.Millisecond))
	type sent struct {
		i   int
		ack jetstream.PubAckFuture
	}
	var inflight []sent
	settle := func() {
		for _, s := range inflight {
			select {
			case ack := <-s.ack.Ok():
				if ack.Duplicate {
					h.dups++
					continue
				}
				if prev, dup := h.stored[ack.Sequence]; dup {
					h.fail("sequence %d acked for messages %d and %d", ack.Sequence, prev, s.i)
				}
				h.stored[ack.Sequence] = s.i
			case err := <-s.ack.Err():
				h.refused[refusal(err)]++
			case <-ctx.Done():
				h.t.Fatalf("seed %d: no publish ack for message %d: %v", h.seed, s.i, ctx.Err())
			}
		}
		inflight = inflight[:0]
	}
	for i := range n {
		m := g.next()
		h.msgs = append(h.msgs, m)
		f, err := h.c.js.PublishMsgAsync(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
		if err != nil {
			// Refused by the client before it was sent (a header block
			// too large, say): not in the stream either.
			h.refused["client: "+err.Error()]++
			continue
		}
		inflight = append(inflight, sent{i, f})
		if len(inflight) == 200 {
			settle()
		}
	}
	settle()
	h.serverWritten(ctx)
	good := 0
	for _, i := range h.stored {
		if h.msgs[i].Good {
			good++
		}
	}
	h.summary["published"] = fmt.Sprintf("%d sent, %d stored (%d good), %d duplicates, refused %v", n, len(h.stored), good, h.dups, h.refused)
	if good == 0 || len(h.stored) < n/2 {
		h.t.Fatalf("seed %d: the stream stored %d of %d messages (%d good); the generator no longer draws what the server takes", h.seed, len(h.stored), n, good)
	}
}

// serverWritten adds to what the stream stored the messages the server
// wrote itself because of a published header: a Nats-Trace-Dest within the
// stream's subjects makes it publish trace events there. They come after
// the publish was acknowledged, so the stream's last sequence is watched
// until it holds still for a second.
func (h *hostileEnv) serverWritten(ctx context.Context) {
	h.t.Helper()
	stream, err := h.c.js.Stream(ctx, strings.ToUpper(h.name))
	if err != nil {
		h.t.Fatal(err)
	}
	var last uint64
	for stable := time.Now(); time.Since(stable) < time.Second; time.Sleep(100 * time.Millisecond) {
		info, err := stream.Info(ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		if info.State.LastSeq != last {
			last, stable = info.State.LastSeq, time.Now()
		}
	}
	written := 0
	for q := uint64(1); q <= last; q++ {
		if _, ok := h.stored[q]; ok {
			continue
		}
		m, err := stream.GetMsg(ctx, q)
		if err != nil {
			h.t.Fatalf("seed %d: sequence %d, which no publish was acknowledged with: %v", h.seed, q, err)
		}
		h.stored[q] = len(h.msgs)
		h.msgs = append(h.msgs, hostileMsg{Subject: m.Subject, Header: m.Header, Data: m.Data, Draws: []string{"server-written"}})
		written++
	}
	h.summary["server-written"] = fmt.Sprintf("%d messages the server wrote into the stream (trace events)", written)
}

// refusal is the kind of a publish the server refused: its error without
// the numbers that differ from one message to the next.
func refusal(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "description="); i >= 0 {
		s = s[i+len("description="):]
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return s
}

// runUntilIdle runs run -until-idle within hostileUntilIdle.
func (h *hostileEnv) runUntilIdle() {
	h.t.Helper()
	cmd := exec.Command(binary, "run", "-until-idle", "-config", h.file)
	cmd.Env = h.c.minio.ClientEnv()
	start := time.Now()
	out, err := runWithTimeout(cmd, hostileUntilIdle)
	h.runTook, h.runErr, h.runLog = time.Since(start), err, string(out)
	h.summary["run -until-idle"] = fmt.Sprintf("%s, %v", h.runTook.Round(100*time.Millisecond), err)
	switch {
	case h.runTook >= hostileUntilIdle:
		h.fail("run -until-idle did not end within %s (killed); the last of its log:\n%s", hostileUntilIdle, logTail(h.runLog, 12))
	case err != nil:
		h.fail("run -until-idle: %v; the last of its log:\n%s", err, logTail(h.runLog, 12))
	}
}

// logTail returns what matters of a log for a failure message: its
// distinct warnings and errors but rejections (the first 8), then its last n lines, a line
// repeated in a row (but for its time) shown once, each cut to 400 bytes.
func logTail(log string, n int) string {
	cut := func(l string) string {
		if len(l) > 400 {
			return l[:400] + "…"
		}
		return l
	}
	untimed := func(l string) string {
		if _, rest, ok := strings.Cut(l, " "); ok && strings.HasPrefix(l, "time=") {
			return rest
		}
		return l
	}
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	var out []string
	seen := map[string]bool{}
	for _, l := range lines {
		// A rejected message is a warning the hostile messages are
		// meant to cause; the others say what went wrong.
		if (strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR")) && !strings.Contains(l, `msg="message rejected"`) && len(seen) < 8 {
			key := untimed(l)
			if i := strings.Index(key, "sequence="); i > 0 {
				key = key[:i] // one line per kind of problem, not per message
			}
			if !seen[key] {
				seen[key] = true
				out = append(out, cut(l))
			}
		}
	}
	if len(out) > 0 {
		out = append(out, "…")
	}
	var tail []string
	for i := len(lines) - 1; i >= 0 && len(tail) < n; i-- {
		if i > 0 && untimed(lines[i]) == untimed(lines[i-1]) {
			continue
		}
		tail = append(tail, cut(lines[i]))
	}
	slices.Reverse(tail)
	return strings.Join(append(out, tail...), "\n")
}

// place is where a sequence was found.
type place struct {
	key    string
	kind   string // "data", "rejected", "lost"
	reason string // a rejected message's Jetlake-Reject-Reason, a marker's reason
}

// check reads the bucket (and the table) back and checks every property.
func (h *hostileEnv) check() {
	h.t.Helper()
	ctx := context.Background()
	own := pathtemplate.OwnPrefix("lake")
	found := map[uint64][]place{}
	var keys []string
	for obj := range h.c.mc.ListObjects(ctx, h.name, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			h.t.Fatal(obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	var outside, strange, badSegments []string
	dataObjects, rejectedObjects, markers := 0, 0, 0
	rejectReasons := map[string]int{}
	for _, key := range keys {
		if !strings.HasPrefix(key, "lake/") {
			outside = append(outside, key)
			continue
		}
		if strings.HasPrefix(key, own) {
			kind, ok := h.ownKind(key)
			if !ok {
				strange = append(strange, key)
				continue
			}
			switch kind {
			case pathtemplate.Rejected:
				rejectedObjects++
				for _, r := range h.readRejected(key) {
					found[r.seq] = append(found[r.seq], place{key: key, kind: "rejected", reason: r.reason})
					rejectReasons[reasonKind(r.reason)]++
				}
			case pathtemplate.Lost:
				markers++
				m, err := lossmarker.Parse(h.get(key))
				if err != nil {
					h.fail("%s: %v", key, err)
					continue
				}
				for _, run := range m.Runs() {
					for q := run.First; q <= run.Last && q-run.First < 1_000_000; q++ {
						found[q] = append(found[q], place{key: key, kind: "lost", reason: string(m.Reason) + ": " + m.Error})
					}
				}
			}
			continue
		}
		if bad := badSegment(strings.TrimPrefix(key, "lake/")); bad != "" {
			badSegments = append(badSegments, fmt.Sprintf("%q (%s)", key, bad))
		}
		if h.kind.iceberg {
			continue // the table's files are read through its catalog below
		}
		if _, ok := pathtemplate.ParseName(path.Base(key)); !ok {
			strange = append(strange, key)
			continue
		}
		dataObjects++
		seqs, err := formats.Sequences(key, h.get(key))
		if err != nil {
			h.fail("data object %s: %v", key, err)
			continue
		}
		for _, q := range seqs {
			found[q] = append(found[q], place{key: key, kind: "data"})
		}
	}
	if h.kind.iceberg {
		dataObjects = h.readTable(found)
	}
	if len(outside) > 0 {
		h.fail("%d objects outside the connector's prefix lake/, e.g. %q", len(outside), sample(outside))
	}
	if len(strange) > 0 {
		h.fail("%d objects jetlake does not name so (under lake/_jetlake/ of no kind of its own, or not a sequence range), e.g. %q", len(strange), sample(strange))
	}
	if len(badSegments) > 0 {
		h.fail("%d data keys with an empty, relative, _jetlake… or undecodable segment, e.g. %s", len(badSegments), strings.Join(badSegments[:min(3, len(badSegments))], ", "))
	}
	h.summary["objects"] = fmt.Sprintf("%d keys: %d data, %d rejected (%v), %d loss markers", len(keys), dataObjects, rejectedObjects, rejectReasons, markers)
	h.checkPlaces(found)
	h.verify()
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(h.summary)) {
		lines = append(lines, k+": "+h.summary[k])
	}
	h.t.Logf("seed %d, %s connector:\n  %s", h.seed, h.kind.name, strings.Join(lines, "\n  "))
}

// checkPlaces checks that each stored message is in exactly one data
// object or rejected object, good ones in data, and that nothing else is.
func (h *hostileEnv) checkPlaces(found map[uint64][]place) {
	h.t.Helper()
	var missing, twice, goodAside, lost, unknown, noReason []string
	for seq, i := range h.stored {
		m := h.msgs[i]
		ps := found[seq]
		what := fmt.Sprintf("sequence %d (message %d, %s, subject %.60q)", seq, i, strings.Join(m.Draws, " "), m.Subject)
		switch {
		case len(ps) == 0:
			missing = append(missing, what)
			continue
		case len(ps) > 1:
			twice = append(twice, fmt.Sprintf("%s in %v", what, ps))
		}
		p := ps[0]
		switch {
		case p.kind == "lost":
			lost = append(lost, fmt.Sprintf("%s in %s (%s)", what, p.key, p.reason))
		case m.Good && p.kind != "data":
			goodAside = append(goodAside, fmt.Sprintf("%s in %s (%s)", what, p.key, p.reason))
		case p.kind == "rejected" && p.reason == "":
			noReason = append(noReason, fmt.Sprintf("%s in %s", what, p.key))
		}
	}
	for seq, ps := range found {
		if _, ok := h.stored[seq]; !ok {
			unknown = append(unknown, fmt.Sprintf("sequence %d in %v", seq, ps))
		}
	}
	for _, v := range []struct {
		list []string
		what string
	}{
		{missing, "stored messages are in no object"},
		{twice, "stored messages are in more than one object"},
		{lost, "stored messages are named by a loss marker instead of being exported or rejected"},
		{goodAside, "good messages are not in a data object"},
		{noReason, "rejected messages do not say why"},
		{unknown, "sequences in objects were never stored by this test"},
	} {
		if len(v.list) > 0 {
			slices.Sort(v.list)
			h.fail("%d of %d %s, e.g.:\n  %s", len(v.list), len(h.stored), v.what, strings.Join(v.list[:min(5, len(v.list))], "\n  "))
		}
	}
}

// verify runs jetlake verify -deep, which must pass.
func (h *hostileEnv) verify() {
	h.t.Helper()
	cmd := exec.Command(binary, "verify", "-deep", "-quiet", "-config", h.file)
	cmd.Env = h.c.minio.ClientEnv()
	out, err := runWithTimeout(cmd, time.Minute)
	h.summary["verify"] = fmt.Sprint(err)
	if err != nil || !strings.Contains(string(out), "OK: every sequence") {
		h.fail("verify -deep: %v\n%s", err, logTail(string(out), 20))
	}
}

// ownKind says which kind of jetlake's own objects key is, and whether it
// is named as jetlake names that kind: a loss marker or a rejected object
// of the connector's stream, named by sequence range, or a probe.
func (h *hostileEnv) ownKind(key string) (pathtemplate.Kind, bool) {
	stream := strings.ToUpper(h.name)
	for _, k := range []pathtemplate.Kind{pathtemplate.Lost, pathtemplate.Rejected} {
		rest, ok := strings.CutPrefix(key, pathtemplate.StreamPrefix("lake", k, stream))
		if !ok {
			continue
		}
		date, name, ok := strings.Cut(rest, "/")
		if _, err := time.Parse(time.DateOnly, date); err != nil || !ok {
			return k, false
		}
		n, ok := pathtemplate.ParseName(name)
		want := "jsonl"
		if k == pathtemplate.Lost {
			want = pathtemplate.LostExt
		}
		return k, ok && n.Ext == want
	}
	rest, ok := strings.CutPrefix(key, pathtemplate.KindPrefix("lake", pathtemplate.Probe))
	return pathtemplate.Probe, ok && !strings.Contains(rest, "/") && rest != ""
}

// badSegment says what is wrong with a key's segments below the prefix, or
// "" when nothing is: a segment that is empty, "." or "..", starts with
// _jetlake (a folder only jetlake's own objects may take), or is not valid
// UTF-8 or holds a control byte.
func badSegment(key string) string {
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return fmt.Sprintf("segment %q", seg)
		case strings.HasPrefix(seg, pathtemplate.OwnDir):
			return fmt.Sprintf("segment %q", seg)
		case !utf8.ValidString(seg) || strings.ContainsFunc(seg, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return fmt.Sprintf("segment %q has control or invalid bytes", seg)
		}
	}
	return ""
}

// rejectedRecord is a rejected message: its sequence and why.
type rejectedRecord struct {
	seq    uint64
	reason string
}

// readRejected reads a rejected object: JSON Lines records whose headers
// hold the reason.
func (h *hostileEnv) readRejected(key string) []rejectedRecord {
	h.t.Helper()
	var out []rejectedRecord
	sc := bufio.NewScanner(bytes.NewReader(h.get(key)))
	sc.Buffer(nil, 1<<30)
	for n := 1; sc.Scan(); n++ {
		var rec struct {
			Sequence *uint64             `json:"sequence"`
			Headers  map[string][]string `json:"headers"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Sequence == nil {
			h.fail("rejected object %s, line %d: %v (a record with a sequence wanted)", key, n, err)
			continue
		}
		out = append(out, rejectedRecord{seq: *rec.Sequence, reason: strings.Join(rec.Headers[exporter.RejectReasonHeader], "; ")})
	}
	if err := sc.Err(); err != nil {
		h.fail("rejected object %s: %v", key, err)
	}
	return out
}

// reasonKind shortens a reject reason to its kind, for the log.
func reasonKind(reason string) string {
	if i := strings.IndexAny(reason, ":("); i > 0 {
		reason = reason[:i]
	}
	return strings.TrimSpace(reason)
}

// readTable reads the table's current data files through its catalog and
// adds their sequences to found; it returns how many files there are.
func (h *hostileEnv) readTable(found map[uint64][]place) int {
	h.t.Helper()
	db, err := sql.Open("sqlite", "file:"+h.catalog)
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	tr, err := icebergtest.Read(db, false, h.name, "lake", "hostile", icebergtest.MinIOGet(h.c.mc, h.name))
	if err != nil {
		h.fail("the table can not be read: %v", err)
		return 0
	}
	for _, f := range tr.Files {
		if int64(len(f.Seqs)) != f.Records {
			h.fail("%s: %d rows, its manifest entry says %d", f.Path, len(f.Seqs), f.Records)
		}
		for _, q := range f.Seqs {
			found[q] = append(found[q], place{key: f.Path, kind: "data"})
		}
	}
	return len(tr.Files)
}

// get reads an object of the test's bucket.
func (h *hostileEnv) get(key string) []byte {
	h.t.Helper()
	r, err := h.c.mc.GetObject(context.Background(), h.name, key, minio.GetObjectOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer r.Close()
	body, err := io.ReadAll(r)
	if err != nil {
		h.t.Fatal(err)
	}
	return body
}

// sample is the first few of a list, for a failure message.
func sample(list []string) []string {
	return list[:min(3, len(list))]
}
