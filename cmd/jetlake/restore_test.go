package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/exporter/restore"
)

// restoreEnv is a stream exported by a connector, for restores.
type restoreEnv struct {
	t      *testing.T
	js     jetstream.JetStream
	stream string
	file   string
	creds  []string
	sent   []*nats.Msg // by sequence - 1
}

// newRestoreEnv publishes n messages with headers to a new stream over
// three subjects, exports them with the output settings given, and
// deletes the stream.
func newRestoreEnv(t *testing.T, name string, n int, output string) *restoreEnv {
	t.Helper()
	ns, ms := shared.NATS(t), shared.MinIO(t)
	e := &restoreEnv{t: t, js: streamAndBucket(t, ns, ms, name, jetstream.StreamConfig{}), stream: strings.ToUpper(name), creds: ms.ClientEnv()}
	ctx := context.Background()
	for i := range n {
		m := nats.NewMsg(fmt.Sprintf("%s.s%d", name, i%3))
		switch i % 4 {
		case 0:
			m.Data = fmt.Appendf(nil, `{"i":%d,"user":{"name":"user-%d","tags":["a","b"]},"price":12.50}`, i, i)
		case 1:
			m.Data = fmt.Appendf(nil, "\xff\xfe binary %d \x00", i)
		case 2:
			m.Data = nil
		case 3:
			m.Data = fmt.Appendf(nil, `"just a string \u00e9 %d"`, i)
		}
		m.Header.Add("Tenant", fmt.Sprintf("t%d", i%5))
		m.Header.Add("Multi", "one")
		m.Header.Add("Multi", "two")
		if i%7 == 0 {
			m.Header.Set("Nats-Msg-Id", fmt.Sprintf("id-%d", i))
		}
		if _, err := e.js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
		e.sent = append(e.sent, m)
	}
	e.file = writeFile(t, name+".toml", fmt.Sprintf(`name = %q
[nats]
url = %q
[[streams]]
stream = %q
[s3]
bucket = %q
endpoint = %q
prefix = "lake"
[rotation]
max_messages_per_file = 250
[output]
%s
include_headers = true
`, name, ns.URL, e.stream, name, ms.Endpoint, output))
	if code, _, stderr := jetlakeEnv(t, e.creds, "run", "-until-idle", "-config", e.file); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	if err := e.js.DeleteStream(ctx, e.stream); err != nil {
		t.Fatal(err)
	}
	return e
}

// recreate creates the stream again, empty, as a restore's target.
func (e *restoreEnv) recreate(cfg jetstream.StreamConfig) {
	e.t.Helper()
	cfg.Name = e.stream
	if cfg.Subjects == nil {
		cfg.Subjects = []string{strings.ToLower(e.stream) + ".>"}
	}
	if _, err := e.js.CreateStream(context.Background(), cfg); err != nil {
		e.t.Fatal(err)
	}
}

// restored reads the target stream: its messages by sequence.
func (e *restoreEnv) restored() []*jetstream.RawStreamMsg {
	e.t.Helper()
	ctx := context.Background()
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for q := info.State.FirstSeq; q <= info.State.LastSeq && info.State.Msgs > 0; q++ {
		m, err := st.GetMsg(ctx, q)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			e.t.Fatalf("sequence %d: %v", q, err)
		}
		out = append(out, m)
	}
	return out
}

// wantRestored checks that got holds, in order, every message sent once,
// with its subject (after prefix), headers and payload, under its own
// sequence when kept.
func (e *restoreEnv) wantRestored(got []*jetstream.RawStreamMsg, prefix string, kept bool) {
	e.t.Helper()
	if len(got) != len(e.sent) {
		e.t.Fatalf("the target holds %d messages, want %d", len(got), len(e.sent))
	}
	for i, m := range got {
		want := e.sent[i]
		src, _ := strconv.Atoi(m.Header.Get(restore.HeaderSourceSequence))
		subject := want.Subject
		if prefix != "" {
			subject = prefix + "." + subject
		}
		switch {
		case src != i+1:
			e.t.Fatalf("message %d restores source sequence %d", i+1, src)
		case kept && m.Sequence != uint64(i+1):
			e.t.Fatalf("source sequence %d restored as %d, want its own", i+1, m.Sequence)
		case m.Subject != subject:
			e.t.Fatalf("sequence %d: subject %q, want %q", i+1, m.Subject, subject)
		case !bytes.Equal(m.Data, want.Data):
			e.t.Fatalf("sequence %d: payload %q, want %q", i+1, m.Data, want.Data)
		case m.Header.Get(restore.HeaderSourceStream) != e.stream:
			e.t.Fatalf("sequence %d: %s %q", i+1, restore.HeaderSourceStream, m.Header.Get(restore.HeaderSourceStream))
		}
		for k, vs := range want.Header {
			if strings.HasPrefix(k, "Nats-") {
				k = restore.HeaderKeptPrefix + k
			}
			if !slices.Equal(m.Header.Values(k), vs) {
				e.t.Fatalf("sequence %d: header %s %q, want %q", i+1, k, m.Header.Values(k), vs)
			}
		}
	}
}

// A stream exported as JSON lines (gzip) and as parquet, with headers, is
// deleted and created again; restore gives every message back once, in
// order and under its own sequence, with its subject, headers and payload
// byte for byte (JSON payloads as published, compact; binary ones through
// base64), and a Nats-Msg-Id kept under Jetlake-Source-Header-. Run again,
// it publishes nothing.
func TestRestoreGivesADeletedStreamBackExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, output string
		target       jetstream.StreamConfig
		published    string
	}{
		{"rjsonl", "format = \"json_lines\"\ncompression = \"gzip\"", jetstream.StreamConfig{AllowAtomicPublish: true, AllowDirect: true}, "in atomic batches"},
		{"rparquet", "format = \"parquet\"", jetstream.StreamConfig{AllowAtomicPublish: true, AllowDirect: true}, "in atomic batches"},
		{"rchain", "format = \"json_lines\"", jetstream.StreamConfig{AllowBatchPublish: true, AllowDirect: true}, "in fast batches, each right after the one before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newRestoreEnv(t, tc.name, 1000, tc.output)
			e.recreate(tc.target)
			code, stdout, stderr := jetlakeEnv(t, e.creds, "restore", "-quiet", "-config", e.file, "-target", e.stream, "-batch", "100")
			if code != exitOK {
				t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
			}
			for _, want := range []string{"1000 messages selected", "1000 messages published " + tc.published, "original sequences kept up to 1000"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("restore output lacks %q:\n%s", want, stdout)
				}
			}
			e.wantRestored(e.restored(), "", true)
			code, stdout, stderr = jetlakeEnv(t, e.creds, "restore", "-quiet", "-config", e.file, "-target", e.stream)
			if code != exitOK || !strings.Contains(stdout, "0 messages published") || !strings.Contains(stdout, "resumed after source sequence 1000") {
				t.Fatalf("restore again: exit %d\n%s\n%s", code, stdout, stderr)
			}
			e.wantRestored(e.restored(), "", true)
			code, stdout, stderr = jetlakeEnv(t, e.creds, "restore", "-quiet", "-config", e.file, "-target", e.stream, "-verify")
			if code != exitOK || !strings.Contains(stdout, "1000 selected messages checked") || !strings.Contains(stdout, "OK: every selected message") {
				t.Fatalf("restore -verify: exit %d\n%s\n%s", code, stdout, stderr)
			}
			// One message gone, one published again with another payload.
			st, err := e.js.Stream(context.Background(), e.stream)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.DeleteMsg(context.Background(), 10); err != nil {
				t.Fatal(err)
			}
			m := e.restored()[19]
			copied := nats.NewMsg(m.Subject)
			for k, vs := range m.Header {
				if !strings.HasPrefix(k, "Nats-") { // the batch's headers the server kept
					copied.Header[k] = vs
				}
			}
			copied.Data = []byte(`{"forged":true}`)
			if _, err := e.js.PublishMsg(context.Background(), copied); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr = jetlakeEnv(t, e.creds, "restore", "-quiet", "-config", e.file, "-target", e.stream, "-verify")
			if code != exitFailure || !strings.Contains(stdout, "FAILED: 1 missing, 1 duplicated, 1 different") {
				t.Fatalf("restore -verify after a message deleted and one forged: exit %d, want %d\n%s\n%s", code, exitFailure, stdout, stderr)
			}
		})
	}
}

// A restore killed (SIGKILL) three times at random moments and run again
// publishes every message once, into a stream that already held other
// messages and under a subject prefix: in atomic batches, and in a chain
// of fast batches.
func TestARestoreKilledAndRunAgainPublishesEveryMessageOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target jetstream.StreamConfig
	}{
		{"rkill", jetstream.StreamConfig{Subjects: []string{"rkill.>", "rkillback.>"}, AllowAtomicPublish: true, AllowDirect: true}},
		{"rkillchain", jetstream.StreamConfig{Subjects: []string{"rkillchain.>", "rkillchainback.>"}, AllowBatchPublish: true, AllowDirect: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			restoreKilled(t, tc.name, tc.target)
		})
	}
}

func restoreKilled(t *testing.T, name string, target jetstream.StreamConfig) {
	e := newRestoreEnv(t, name, 6000, "format = \"json_lines\"")
	e.recreate(target)
	ctx := context.Background()
	for i := range 50 {
		if _, err := e.js.Publish(ctx, fmt.Sprintf("%s.other.%d", name, i), []byte("already there")); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"restore", "-quiet", "-config", e.file, "-target", e.stream, "-subject-prefix", name + "back", "-batch", "50"}
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	killed := 0
	for range 3 {
		cmd := exec.Command(binary, args...)
		cmd.Env = e.creds
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(100+rng.IntN(600)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err == nil {
			killed++
		}
		_ = cmd.Wait()
	}
	code, stdout, stderr := jetlakeEnv(t, e.creds, args...)
	if code != exitOK {
		t.Fatalf("restore after %d kills: exit %d\n%s\n%s", killed, code, stdout, stderr)
	}
	t.Logf("after %d kills:\n%s", killed, stdout)
	var ours []*jetstream.RawStreamMsg
	others := 0
	for _, m := range e.restored() {
		if m.Header.Get(restore.HeaderSourceStream) == "" {
			others++
			continue
		}
		ours = append(ours, m)
	}
	if others != 50 {
		t.Fatalf("the target holds %d of its own 50 messages", others)
	}
	e.wantRestored(ours, name+"back", false)
	code, stdout, stderr = jetlakeEnv(t, e.creds, "restore", "-quiet", "-config", e.file, "-target", e.stream, "-subject-prefix", name+"back", "-verify")
	if code != exitOK || !strings.Contains(stdout, "OK: every selected message") {
		t.Fatalf("restore -verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// A range with a loss marker: restore reports the lost sequences and
// restores the rest; a dry run publishes nothing and says the sequences
// could not be kept.
func TestARestoreReportsTheLossMarkersOfItsRange(t *testing.T) {
	t.Parallel()
	ns, ms := shared.NATS(t), shared.MinIO(t)
	name := "rlost"
	js := streamAndBucket(t, ns, ms, name, jetstream.StreamConfig{})
	ctx := context.Background()
	for i := range 30 {
		if _, err := js.Publish(ctx, fmt.Sprintf("%s.s%d", name, i%3), fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := js.Stream(ctx, strings.ToUpper(name))
	if err != nil {
		t.Fatal(err)
	}
	// Removed before the export: a loss marker names 11-15.
	for q := uint64(11); q <= 15; q++ {
		if err := st.DeleteMsg(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	file := writeFile(t, name+".toml", fmt.Sprintf(`name = %q
[nats]
url = %q
[[streams]]
stream = %q
[s3]
bucket = %q
endpoint = %q
`, name, ns.URL, strings.ToUpper(name), name, ms.Endpoint))
	creds := ms.ClientEnv()
	if code, _, stderr := jetlakeEnv(t, creds, "run", "-until-idle", "-config", file); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := jetlakeEnv(t, creds, "restore", "-quiet", "-config", file, "-dry-run")
	if code != exitOK || !strings.Contains(stdout, "25 messages selected") || !strings.Contains(stdout, "dry run: nothing published") ||
		!strings.Contains(stdout, "LOST 11-15") || !strings.Contains(stdout, "could not be kept") {
		t.Fatalf("restore -dry-run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if err := js.DeleteStream(ctx, strings.ToUpper(name)); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RLOSTBACK", Subjects: []string{"rlost.>"}, AllowAtomicPublish: true}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = jetlakeEnv(t, creds, "restore", "-quiet", "-config", file, "-target", "RLOSTBACK")
	if code != exitOK || !strings.Contains(stdout, "25 messages published") || !strings.Contains(stdout, "LOST 11-15") ||
		!strings.Contains(stdout, "original sequences kept up to 10") {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	info, err := js.Stream(ctx, "RLOSTBACK")
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().State.Msgs; got != 25 {
		t.Fatalf("the target holds %d messages, want 25", got)
	}
}

// newIcebergRestoreEnv makes a stream and a connector that exports it to
// an Iceberg table through a sqlite catalog, with headers, typed columns
// beside the payload, files of at most 50 messages and the table
// partitioned as partitioning says (its [iceberg] key; "" for the
// default, by hour and subject); it publishes nothing yet (see
// publishMixed and export).
func newIcebergRestoreEnv(t *testing.T, name, partitioning string) *restoreEnv {
	t.Helper()
	ns, ms := shared.NATS(t), shared.MinIO(t)
	e := &restoreEnv{t: t, js: streamAndBucket(t, ns, ms, name, jetstream.StreamConfig{}), stream: strings.ToUpper(name), creds: ms.ClientEnv()}
	e.file = writeFile(t, name+".toml", fmt.Sprintf(`name = %q
[nats]
url = %q
[[streams]]
stream = %q
[s3]
bucket = %q
endpoint = %q
prefix = "lake"
[rotation]
max_messages_per_file = 50
[output]
format = "parquet"
include_headers = true
on_type_error = "null"
[[output.columns]]
name = "price"
source = "price"
type = "double"
[iceberg]
uri = %q
namespace = "lake"
table = "events"
commit_interval = "1s"
compact_after = "1s"
%s
`, name, ns.URL, e.stream, name, ms.Endpoint, "sqlite://"+filepath.Join(t.TempDir(), "catalog.db"), partitioning))
	return e
}

// publishMixed publishes n more messages over three subjects, with
// headers and JSON, binary, empty and JSON string payloads in turn.
func (e *restoreEnv) publishMixed(n int) {
	e.t.Helper()
	name := strings.ToLower(e.stream)
	for range n {
		i := len(e.sent)
		m := nats.NewMsg(fmt.Sprintf("%s.s%d", name, i%3))
		switch i % 4 {
		case 0:
			m.Data = fmt.Appendf(nil, `{"i":%d,"user":{"name":"user-%d","tags":["a","b"]},"price":12.50}`, i, i)
		case 1:
			m.Data = fmt.Appendf(nil, "\xff\xfe binary %d \x00", i)
		case 2:
			m.Data = nil
		case 3:
			m.Data = fmt.Appendf(nil, `"just a string \u00e9 %d"`, i)
		}
		m.Header.Add("Tenant", fmt.Sprintf("t%d", i%5))
		m.Header.Add("Multi", "one")
		m.Header.Add("Multi", "two")
		if i%7 == 0 {
			m.Header.Set("Nats-Msg-Id", fmt.Sprintf("id-%d", i))
		}
		if _, err := e.js.PublishMsg(context.Background(), m); err != nil {
			e.t.Fatal(err)
		}
		e.sent = append(e.sent, m)
	}
}

// export runs the connector until it is idle: everything published is
// committed to the table. It returns the run's log.
func (e *restoreEnv) export() string {
	e.t.Helper()
	code, _, stderr := jetlakeEnv(e.t, e.creds, "run", "-until-idle", "-config", e.file)
	if code != 0 {
		e.t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	return stderr
}

// compact merges the table's small files once their partitions closed
// (compact_after is a second), and fails unless some were merged, by it
// or by the run before (runLog).
func (e *restoreEnv) compact(runLog string) {
	e.t.Helper()
	time.Sleep(1500 * time.Millisecond)
	code, stdout, stderr := jetlakeEnv(e.t, e.creds, "compact", "-config", e.file)
	if code != 0 || !strings.Contains(stdout, "merged") && !strings.Contains(runLog, "iceberg files compacted") {
		e.t.Fatalf("compact: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// restoreReport runs restore with args and returns its output; it fails
// unless restore exits with code.
func (e *restoreEnv) restoreReport(code int, args ...string) string {
	e.t.Helper()
	got, stdout, stderr := jetlakeEnv(e.t, e.creds, append([]string{"restore", "-quiet", "-config", e.file}, args...)...)
	if got != code {
		e.t.Fatalf("restore %q: exit %d, want %d\n%s\n%s", args, got, code, stdout, stderr)
	}
	return stdout + stderr
}

// wantInReport fails unless out holds each of want.
func wantInReport(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("restore output lacks %q:\n%s", w, out)
		}
	}
}

var (
	snapshotLine = regexp.MustCompile(`Iceberg table lake\.events, (?:current )?snapshot (-?\d+) \(\w+, committed [^)]+\), (\d+) data files in all`)
	objectsLine  = regexp.MustCompile(`(\d+) data objects read`)
)

// readSnapshot returns the snapshot a restore's output names, and checks
// that the restore read every data file of it, and no other (the stream
// is the table's only one): a data file another snapshot holds, or one
// replaced by compaction, is not read.
func readSnapshot(t *testing.T, out string) string {
	t.Helper()
	s, o := snapshotLine.FindStringSubmatch(out), objectsLine.FindStringSubmatch(out)
	switch {
	case s == nil || o == nil:
		t.Fatalf("restore output names no snapshot or objects read:\n%s", out)
	case s[2] != o[1]:
		t.Fatalf("restore read %s data objects of a snapshot of %s data files:\n%s", o[1], s[2], out)
	case strings.Contains(out, "two objects hold"):
		t.Fatalf("restore read a sequence twice:\n%s", out)
	}
	return s[1]
}

// An Iceberg connector (headers, a typed column, partitioned by subject)
// exports 1,000 messages with JSON, binary and empty payloads; a
// compaction merges the files of the first 600 and leaves the replaced
// files in the bucket. The stream is deleted and created again: restore
// reads the data files of the table's current snapshot only, and gives
// every message back once, byte for byte, under its own sequence. Run
// again, it publishes nothing.
func TestRestoreFromAnIcebergTableGivesEveryMessageBackOnce(t *testing.T) {
	t.Parallel()
	e := newIcebergRestoreEnv(t, "riceberg", `partitioning = ["subject"]`)
	e.publishMixed(600)
	e.compact(e.export())
	e.publishMixed(400)
	e.export()
	if err := e.js.DeleteStream(context.Background(), e.stream); err != nil {
		t.Fatal(err)
	}
	e.recreate(jetstream.StreamConfig{AllowAtomicPublish: true, AllowDirect: true})
	out := e.restoreReport(exitOK, "-target", e.stream, "-batch", "100")
	wantInReport(t, out, "current snapshot", "1000 messages selected", "1000 messages published in atomic batches", "original sequences kept up to 1000")
	readSnapshot(t, out)
	e.wantRestored(e.restored(), "", true)
	out = e.restoreReport(exitOK, "-target", e.stream)
	wantInReport(t, out, "0 messages published", "resumed after source sequence 1000")
	e.wantRestored(e.restored(), "", true)
}

// -snapshot restores what an older snapshot of the table held, and only
// that, though a compaction replaced its files since: 300 messages of a
// table that now holds 600. A restore of the current snapshot then goes
// on after them, and the stream is whole, each message once under its own
// sequence. A snapshot the table does not have is refused, naming those
// it has.
func TestRestoreOfAnOlderIcebergSnapshotTakesOnlyWhatItHeld(t *testing.T) {
	t.Parallel()
	e := newIcebergRestoreEnv(t, "ricesnap", "")
	e.publishMixed(300)
	e.export()
	older := readSnapshot(t, e.restoreReport(exitOK, "-dry-run"))
	e.publishMixed(300)
	e.compact(e.export())
	if err := e.js.DeleteStream(context.Background(), e.stream); err != nil {
		t.Fatal(err)
	}
	e.recreate(jetstream.StreamConfig{AllowAtomicPublish: true, AllowDirect: true})

	out := e.restoreReport(exitOK, "-target", e.stream, "-snapshot", older)
	wantInReport(t, out, "snapshot "+older+" (append", "300 messages selected", "300 messages published in atomic batches", "original sequences kept up to 300")
	if readSnapshot(t, out) != older || strings.Contains(out, "current snapshot") {
		t.Fatalf("restore -snapshot %s read another snapshot:\n%s", older, out)
	}
	first := *e
	first.sent = e.sent[:300]
	first.wantRestored(e.restored(), "", true)

	out = e.restoreReport(exitOK, "-target", e.stream)
	wantInReport(t, out, "current snapshot", "600 messages selected", "resumed after source sequence 300", "300 messages published in atomic batches", "original sequences kept up to 600")
	if readSnapshot(t, out) == older {
		t.Fatalf("the current snapshot is still %s after another export and a compaction:\n%s", older, out)
	}
	e.wantRestored(e.restored(), "", true)

	out = e.restoreReport(exitFailure, "-dry-run", "-snapshot", "12345")
	wantInReport(t, out, "no such snapshot 12345")
	if !strings.Contains(out, older) {
		t.Fatalf("refusing snapshot 12345, restore does not name the table's snapshot %s:\n%s", older, out)
	}
}

// The messages a connector rejected (here, without the event time its
// path needs) are reported and left out of a restore, and with -rejected
// restored in sequence order among the others, each saying why it was
// rejected.
func TestARestoreWithRejectedGivesBackTheRejectedMessagesToo(t *testing.T) {
	t.Parallel()
	ns, ms := shared.NATS(t), shared.MinIO(t)
	name := "rrej"
	js := streamAndBucket(t, ns, ms, name, jetstream.StreamConfig{})
	ctx := context.Background()
	for i := range 20 {
		data := fmt.Appendf(nil, `{"i":%d,"created_at":%d}`, i, time.Now().UnixMilli())
		if i%5 == 0 {
			data = fmt.Appendf(nil, `{"i":%d}`, i)
		}
		if _, err := js.Publish(ctx, fmt.Sprintf("%s.s%d", name, i%2), data); err != nil {
			t.Fatal(err)
		}
	}
	file := writeFile(t, name+".toml", fmt.Sprintf(`name = %q
[nats]
url = %q
[[streams]]
stream = %q
[s3]
bucket = %q
endpoint = %q
[output]
path_template = "{stream}/{date}/{hour}"
time_source = "column:created_at"
time_fallback = "reject"
[[output.columns]]
name = "created_at"
source = "created_at"
type = "timestamp"
unit = "ms"
`, name, ns.URL, strings.ToUpper(name), name, ms.Endpoint))
	creds := ms.ClientEnv()
	if code, _, stderr := jetlakeEnv(t, creds, "run", "-until-idle", "-config", file); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	if err := js.DeleteStream(ctx, strings.ToUpper(name)); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"RREJA", "RREJB"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: target, Subjects: []string{target + ".>"}, AllowAtomicPublish: true}); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := jetlakeEnv(t, creds, "restore", "-quiet", "-config", file, "-target", "RREJA", "-subject-prefix", "RREJA")
	if code != exitOK || !strings.Contains(stdout, "16 messages published") || !strings.Contains(stdout, "not restored (-rejected restores them)") {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = jetlakeEnv(t, creds, "restore", "-quiet", "-config", file, "-target", "RREJB", "-subject-prefix", "RREJB", "-rejected")
	if code != exitOK || !strings.Contains(stdout, "20 messages published") || !strings.Contains(stdout, "4 rejected messages") {
		t.Fatalf("restore -rejected: exit %d\n%s\n%s", code, stdout, stderr)
	}
	st, err := js.Stream(ctx, "RREJB")
	if err != nil {
		t.Fatal(err)
	}
	for q := uint64(1); q <= 20; q++ {
		m, err := st.GetMsg(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := strconv.Atoi(m.Header.Get(restore.HeaderSourceSequence))
		why := m.Header.Get(restore.HeaderSourceRejected)
		if src != int(q) || (src%5 == 1) != (why != "") {
			t.Fatalf("sequence %d: restores source sequence %d with %s %q", q, src, restore.HeaderSourceRejected, why)
		}
	}
}

// -event-since and -event-until select by the event time the connector's
// time_source reads (a payload column here), not by when the stream stored
// the message; a connector without an event time refuses them.
func TestARestoreSelectsByEventTime(t *testing.T) {
	t.Parallel()
	ns, ms := shared.NATS(t), shared.MinIO(t)
	name := "revt"
	js := streamAndBucket(t, ns, ms, name, jetstream.StreamConfig{})
	ctx := context.Background()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 30 {
		at := base.Add(time.Duration(i%3) * 24 * time.Hour).Add(time.Duration(i) * time.Minute)
		if _, err := js.Publish(ctx, fmt.Sprintf("%s.s%d", name, i%2), fmt.Appendf(nil, `{"i":%d,"created_at":%d}`, i, at.UnixMilli())); err != nil {
			t.Fatal(err)
		}
	}
	connector := func(timed bool) string {
		body := fmt.Sprintf(`name = %q
[nats]
url = %q
[[streams]]
stream = %q
[s3]
bucket = %q
endpoint = %q
`, name, ns.URL, strings.ToUpper(name), name, ms.Endpoint)
		if timed {
			body += `[output]
time_source = "column:created_at"
[[output.columns]]
name = "created_at"
source = "created_at"
type = "timestamp"
unit = "ms"
`
		}
		return writeFile(t, fmt.Sprintf("%s-%v.toml", name, timed), body)
	}
	timed := connector(true)
	creds := ms.ClientEnv()
	if code, _, stderr := jetlakeEnv(t, creds, "run", "-until-idle", "-config", timed); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := jetlakeEnv(t, creds, "restore", "-quiet", "-config", timed, "-dry-run",
		"-event-since", base.Add(24*time.Hour).Format(time.RFC3339), "-event-until", base.Add(48*time.Hour).Format(time.RFC3339))
	if code != exitOK || !strings.Contains(stdout, "10 messages selected") {
		t.Fatalf("restore -event-since -event-until: exit %d, want 10 of 30 selected\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = jetlakeEnv(t, creds, "restore", "-quiet", "-config", timed, "-dry-run", "-since", base.Add(24*time.Hour).Format(time.RFC3339))
	if code != exitOK || !strings.Contains(stdout, "30 messages selected") {
		t.Fatalf("restore -since (stream times, all of today): exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = jetlakeEnv(t, creds, "restore", "-quiet", "-config", connector(false), "-dry-run", "-event-since", base.Format(time.RFC3339))
	if code != exitFailure || !strings.Contains(stderr, "has no event time") {
		t.Fatalf("restore -event-since of a connector without event time: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
