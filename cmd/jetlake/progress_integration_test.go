package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// backfillMessages is the size of the backfill the progress test exports,
// backfillPerObject the messages of each object it writes: 20 objects, 20
// log lines among the status lines.
const (
	backfillMessages  = 1_000_000
	backfillPerObject = 50_000
)

// A backfill of a million messages with run -until-idle shows its
// progress: in a terminal (a pty, through script(1)) a status line
// rewritten in place whose exported count grows and whose pending count
// falls to 0, ended with a newline, with the log lines whole around it;
// with stderr not a terminal, progress log lines at a steady cadence and a
// last one marked final. The cadence is 10 s (TestProgressIsLoggedEveryTenSeconds);
// the run logs every 2 s here (progress_fault.go), so that the lines show
// however fast the machine exports. Both runs export the same stream at
// once, each with its own consumer.
func TestUntilIdleShowsProgress(t *testing.T) {
	t.Parallel()
	ns, ms := shared.NATS(t), shared.MinIO(t) // an integration test: skipped under -short
	// script(1) comes with util-linux (Debian's essential bsdutils): a
	// machine without it can not run this check, which is a failure, not
	// a reason to skip it.
	scriptPath, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1) is not installed: no pty to run jetlake in: %v", err)
	}
	ctx := context.Background()
	js := streamAndBucket(t, ns, ms, "backfill", jetstream.StreamConfig{})
	start := time.Now()
	publishBackfill(t, ns.URL, "backfill.events", backfillMessages)
	t.Logf("published %d messages in %s", backfillMessages, time.Since(start).Round(time.Millisecond))

	config := func(name string) string {
		return writeFile(t, name+".toml", fmt.Sprintf(`name = %[1]q
[nats]
url = %[2]q
[[streams]]
stream = "BACKFILL"
consumer = %[1]q
[s3]
bucket = "backfill"
endpoint = %[3]q
prefix = %[1]q
[rotation]
max_messages_per_file = %[4]d
[output]
# No time in the path: an hour that turns during the backfill would cut
# an object early, and the count of objects verify reads would be off.
path_template = "{stream}/{subject}"
`, name, ns.URL, ms.Endpoint, backfillPerObject))
	}
	tty, logged := config("tty"), config("logged")

	var wg sync.WaitGroup
	var ttyOut, logOut bytes.Buffer
	var ttyErr, logErr error
	var ttyTook, logTook time.Duration
	wg.Go(func() {
		// script runs the command in a pty and copies what it writes to
		// its own stdout; -e returns the command's exit code.
		cmd := exec.Command(scriptPath, "-qfec", binary+" run -until-idle -config "+tty, "/dev/null")
		cmd.Env = ms.ClientEnv()
		cmd.Stdout, cmd.Stderr = &ttyOut, &ttyOut
		began := time.Now()
		ttyErr = cmd.Run()
		ttyTook = time.Since(began)
	})
	wg.Go(func() {
		cmd := exec.Command(binary, "run", "-until-idle", "-config", logged)
		cmd.Env = ms.ClientEnv("JETLAKE_PROGRESS_LOG_EVERY=" + loggedEvery.String()) // progress_fault.go
		cmd.Stderr = &logOut
		began := time.Now()
		logErr = cmd.Run()
		logTook = time.Since(began)
	})
	wg.Wait()
	t.Logf("exported in a terminal in %s, logging in %s", ttyTook.Round(time.Millisecond), logTook.Round(time.Millisecond))
	if ttyErr != nil {
		t.Fatalf("run -until-idle in a terminal: %v\n%s", ttyErr, tail(ttyOut.String()))
	}
	if logErr != nil {
		t.Fatalf("run -until-idle: %v\n%s", logErr, tail(logOut.String()))
	}
	for _, name := range []string{"tty", "logged"} {
		info, err := js.Consumer(ctx, "BACKFILL", name)
		if err != nil {
			t.Fatal(err)
		}
		if ci := info.CachedInfo(); ci.NumPending != 0 || exportedFloor(t, js, ci) != backfillMessages {
			t.Fatalf("consumer %s: %d pending, exported up to %d; want everything exported", name, ci.NumPending, exportedFloor(t, js, ci))
		}
	}
	checkTerminalProgress(t, ttyOut.String())
	checkLoggedProgress(t, logOut.String(), logTook)

	// verify shows its progress the same ways: the objects read out of
	// those listed, the bytes, the problems.
	objects := backfillMessages / backfillPerObject
	verify := exec.Command(scriptPath, "-qfec", binary+" verify -deep -config "+tty, "/dev/null")
	verify.Env = ms.ClientEnv()
	out, err := verify.CombinedOutput()
	final := fmt.Sprintf("verify tty (checking stream BACKFILL): %d of %d listed objects read, ", objects, objects)
	if err != nil || !strings.Contains(string(out), "\r"+final) || !strings.Contains(string(out), " 0 problems\x1b[K\r\nconnector tty, stream BACKFILL") {
		t.Fatalf("verify -deep in a terminal: %v, want its last status line %q… 0 problems, then the report:\n%q", err, final, tail(string(out)))
	}
	cmd := exec.Command(binary, "verify", "-config", logged)
	cmd.Env = ms.ClientEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("verify: %v\n%s", err, stderr.String())
	}
	done := fmt.Sprintf(`msg=progress connector=logged stage="checking stream BACKFILL" listed=%d read=%d bytes=0 problems=0 final=true`, objects, objects)
	if !strings.Contains(stderr.String(), done) {
		t.Fatalf("verify's log lacks %q:\n%s", done, stderr.String())
	}
}

// publishBackfill publishes n small messages to subject, asynchronously,
// with up to 16,384 unacknowledged at once.
func publishBackfill(t *testing.T, url, subject string, n int) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(16384))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		body := strconv.AppendInt([]byte(`{"i":`), int64(i), 10)
		if _, err := js.PublishAsync(subject, append(body, '}'), jetstream.WithStallWait(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		t.Fatalf("%d publishes not acknowledged after 2 minutes", js.PublishAsyncPending())
	}
	stream, err := js.Stream(context.Background(), strings.ToUpper(strings.Split(subject, ".")[0]))
	if err != nil {
		t.Fatal(err)
	}
	if got := stream.CachedInfo().State.Msgs; got != uint64(n) {
		t.Fatalf("the stream holds %d messages, want %d", got, n)
	}
}

// loggedEvery is how often the run whose stderr is not a terminal logs
// its progress in the test.
const loggedEvery = 2 * time.Second

var (
	statusRe = regexp.MustCompile(`^tty: ([0-9,]+) exported, ([0-9,]+|\?) pending`)
	loggedRe = regexp.MustCompile(`^time=(\S+) level=INFO msg=progress connector=logged exported=([0-9]+)(?: pending=([0-9]+))?`)
)

// checkTerminalProgress checks what the pty showed: redraws of one status
// line (carriage return, line, clear to its end) whose exported count
// never falls and grows to the backfill, whose pending count falls to 0,
// the last one ended with a newline; and on the screen every log line
// whole, with only the last status line left among them.
func checkTerminalProgress(t *testing.T, out string) {
	t.Helper()
	out = strings.ReplaceAll(out, "\r\n", "\n") // the pty's newlines
	var exported, pending []uint64
	for _, line := range strings.Split(out, "\n") {
		for _, draw := range strings.Split(line, "\r") {
			// A status line is drawn as line + clear to its end; a log
			// line follows a clear of the status line.
			draw = strings.TrimSuffix(strings.TrimPrefix(draw, "\x1b[K"), "\x1b[K")
			if strings.Contains(draw, "\x1b[K") {
				t.Fatalf("a clear to the end of the line in the middle of %q", draw)
			}
			m := statusRe.FindStringSubmatch(draw)
			if m == nil {
				continue
			}
			exported = append(exported, digits(t, m[1]))
			if m[2] != "?" {
				pending = append(pending, digits(t, m[2]))
			}
		}
	}
	if len(exported) < 3 {
		t.Fatalf("%d status lines drawn, want the progress as it went:\n%s", len(exported), tail(out))
	}
	for i := 1; i < len(exported); i++ {
		if exported[i] < exported[i-1] {
			t.Fatalf("the exported count fell from %d to %d", exported[i-1], exported[i])
		}
	}
	if first, last := exported[0], exported[len(exported)-1]; first >= last || last != backfillMessages {
		t.Fatalf("exported went from %d to %d, want it to grow to %d", first, last, backfillMessages)
	}
	if len(pending) < 2 || pending[0] == 0 || pending[len(pending)-1] != 0 {
		t.Fatalf("pending counts %v, want them to fall to 0", pending)
	}
	last := strings.LastIndex(out, ", done\x1b[K\n")
	if last < 0 || strings.Contains(out[last:], "\x1b[K\r") || strings.Contains(out[last:], "\ntty: ") {
		t.Fatalf("the status line is not ended by its last, done, drawing and a newline:\n%q", tail(out))
	}
	// The screen: log lines whole, and the status line once, the last
	// one drawn.
	screen := strings.Split(strings.TrimSuffix(render(out), "\n"), "\n")
	logs, statuses := 0, 0
	for _, line := range screen {
		switch {
		case strings.HasPrefix(line, "tty: "):
			if statuses++; statuses > 1 || !strings.HasSuffix(line, ", done") {
				t.Fatalf("a status line left on the screen among the log lines: %q", line)
			}
		case strings.HasPrefix(line, "time=") && strings.Contains(line, " level=") && !strings.Contains(line, "tty: "):
			logs++
		default:
			t.Fatalf("a screen line neither a whole log line nor the status line: %q", line)
		}
	}
	t.Logf("%d status lines drawn between %d log lines, exported %d → %d, pending %d → 0",
		len(exported), logs, exported[0], exported[len(exported)-1], pending[0])
}

// checkLoggedProgress checks the log of a run whose stderr is not a
// terminal: no terminal control codes; progress lines loggedEvery apart
// for as long as the run took, showing the export under way; and a last
// one, marked final, with everything exported and nothing pending.
func checkLoggedProgress(t *testing.T, log string, took time.Duration) {
	t.Helper()
	if strings.Contains(log, "\r") || strings.Contains(log, "\x1b[") {
		t.Fatalf("terminal control codes in a log that is not a terminal's:\n%s", tail(log))
	}
	var periodic []string
	var done []string
	var at []time.Time
	underWay := false
	for _, line := range strings.Split(log, "\n") {
		m := loggedRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if strings.HasSuffix(line, " final=true") {
			done = append(done, line)
			continue
		}
		periodic = append(periodic, line)
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatal(err)
		}
		at = append(at, ts)
		n := digits(t, m[2])
		underWay = underWay || n > 0 && n < backfillMessages && m[3] != "" && strings.Contains(line, "/s idle_in=")
	}
	if want := int(took / loggedEvery); len(periodic) < want-2 || len(periodic) > want {
		t.Fatalf("%d progress lines in a run of %s, want one every %s:\n%s", len(periodic), took, loggedEvery, strings.Join(periodic, "\n"))
	}
	// A line is written once its figures are sampled, which asks the
	// server: a slow answer delays that line and not the next, so two
	// lines may stand closer than loggedEvery (1.4 s on a loaded machine).
	// The count above holds them to one every loggedEvery.
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d < loggedEvery/2 || d > 2*loggedEvery {
			t.Fatalf("progress lines %s apart, want %s:\n%s", d, loggedEvery, strings.Join(periodic, "\n"))
		}
	}
	if !underWay {
		t.Fatalf("no progress line shows the export under way (exported, pending, rate, idle_in):\n%s", strings.Join(periodic, "\n"))
	}
	if len(done) != 1 || !strings.Contains(done[0], fmt.Sprintf("exported=%d pending=0 ", backfillMessages)) {
		t.Fatalf("last progress lines %q, want one with everything exported and nothing pending", done)
	}
	t.Logf("%d progress lines logged in %s, such as: %s", len(periodic), took.Round(time.Millisecond), periodic[len(periodic)/2])
}

func digits(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tail is the end of long output, for a failure message.
func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
