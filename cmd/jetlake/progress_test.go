package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/lake"
)

// terminalOut is a progressOut drawing on buf as on a terminal width
// columns wide (0: unknown), with its log going through it.
func terminalOut(buf *bytes.Buffer, width int) (*progressOut, *slog.Logger) {
	p := &progressOut{term: buf, width: func() int { return width }, every: progressLogEvery}
	log := slog.New(slog.NewTextHandler(p, &slog.HandlerOptions{ReplaceAttr: noTime}))
	p.log = log
	return p, log
}

// noTime drops the time of log records, for output a test can compare.
func noTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func frame(line string) progressFrame { return progressFrame{line: line} }

// On a terminal the status line is rewritten in place: a carriage return,
// the line, clear to the end of the line; the same line is not drawn again;
// the last one ends with a newline.
func TestStatusLineIsRewrittenInPlace(t *testing.T) {
	var buf bytes.Buffer
	p, _ := terminalOut(&buf, 0)
	now := time.Unix(1000, 0)
	p.start(now)
	p.show(now, frame("a: 1 exported"))
	p.show(now.Add(progressTick), frame("a: 2 exported"))
	p.show(now.Add(2*progressTick), frame("a: 2 exported"))
	p.finish(frame("a: 3 exported, done"))
	want := "\ra: 1 exported\x1b[K" + "\ra: 2 exported\x1b[K" + "\ra: 3 exported, done\x1b[K\n"
	if got := buf.String(); got != want {
		t.Fatalf("terminal output\n%q\nwant\n%q", got, want)
	}
}

// A log line written while the status line is up clears it first, so the
// two never share a line; the next sample draws the status line again
// below, once for a burst of log lines; once the work is finished, log
// lines pass through untouched.
func TestLogLinesDoNotMixWithTheStatusLine(t *testing.T) {
	var buf bytes.Buffer
	p, log := terminalOut(&buf, 0)
	now := time.Unix(0, 0)
	log.Info("before")
	p.show(now, frame("status 1"))
	log.Info("during", "n", 1)
	log.Info("during", "n", 2)
	p.show(now.Add(progressTick), frame("status 1"))
	log.Info("during", "n", 3)
	p.finish(frame("status 2"))
	log.Info("after")
	want := "level=INFO msg=before\n" +
		"\rstatus 1\x1b[K" +
		"\r\x1b[K" + "level=INFO msg=during n=1\n" + "level=INFO msg=during n=2\n" +
		"\rstatus 1\x1b[K" +
		"\r\x1b[K" + "level=INFO msg=during n=3\n" +
		"\rstatus 2\x1b[K\n" +
		"level=INFO msg=after\n"
	if got := buf.String(); got != want {
		t.Fatalf("terminal output\n%q\nwant\n%q", got, want)
	}
	// What a terminal shows: every log line whole, the status line where
	// the work ended.
	want = "level=INFO msg=before\nlevel=INFO msg=during n=1\nlevel=INFO msg=during n=2\nlevel=INFO msg=during n=3\nstatus 2\nlevel=INFO msg=after\n"
	if screen := render(buf.String()); screen != want {
		t.Fatalf("the screen shows\n%s\nwant\n%s", screen, want)
	}
}

// render plays terminal output onto a screen: a carriage return goes to
// the start of the line, ESC [ K clears the rest of it.
func render(out string) string {
	var lines []string
	var line []rune
	col := 0
	for i := 0; i < len(out); {
		switch {
		case strings.HasPrefix(out[i:], "\x1b[K"):
			line = line[:col]
			i += 3
			continue
		case out[i] == '\r':
			col = 0
		case out[i] == '\n':
			lines = append(lines, string(line))
			line, col = nil, 0
		default:
			r := []rune(out[i:])[0]
			if col < len(line) {
				line[col] = r
			} else {
				line = append(line, r)
			}
			col++
			i += len(string(r))
			continue
		}
		i++
	}
	return strings.Join(lines, "\n") + "\n" + string(line)
}

// A line wider than the terminal would wrap, and a carriage return would
// then rewrite only its last row: it is cut to the width.
func TestStatusLineIsCutToTheTerminalWidth(t *testing.T) {
	var buf bytes.Buffer
	p, _ := terminalOut(&buf, 10)
	p.show(time.Unix(0, 0), frame("0123456789abcdef"))
	if got, want := buf.String(), "\r01234567…\x1b[K"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Without a terminal, a frame is logged every progressLogEvery from the
// start, not at every sample; a late one (the process was stopped) is
// logged once, and the next is due a full interval after it; the last
// frame is logged, marked final.
func TestProgressIsLoggedEveryTenSeconds(t *testing.T) {
	var buf bytes.Buffer
	p := &progressOut{every: progressLogEvery, log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: noTime}))}
	t0 := time.Unix(1000, 0)
	p.start(t0)
	logged := func(at time.Duration) int {
		before := strings.Count(buf.String(), "\n")
		p.show(t0.Add(at), progressFrame{line: "ignored", logs: [][]any{{"connector", "a", "n", int(at / time.Second)}, {"connector", "b"}}})
		return (strings.Count(buf.String(), "\n") - before) / 2
	}
	steps := []struct {
		at   time.Duration
		want int
	}{
		{250 * time.Millisecond, 0}, {5 * time.Second, 0}, {9750 * time.Millisecond, 0},
		{10 * time.Second, 1}, {10250 * time.Millisecond, 0}, {19750 * time.Millisecond, 0},
		{20 * time.Second, 1}, {20250 * time.Millisecond, 0},
		{47 * time.Second, 1}, // late: once
		{50 * time.Second, 0}, {56 * time.Second, 0}, {57 * time.Second, 1},
	}
	for _, s := range steps {
		if got := logged(s.at); got != s.want {
			t.Fatalf("at %s: %d progress lines, want %d\n%s", s.at, got, s.want, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "level=INFO msg=progress connector=a n=10\nlevel=INFO msg=progress connector=b\n") {
		t.Fatalf("the lines at 10s:\n%s", buf.String())
	}
	buf.Reset()
	p.finish(progressFrame{logs: [][]any{{"connector", "a", "n", 60}}})
	if got, want := buf.String(), "level=INFO msg=progress connector=a n=60 final=true\n"; got != want {
		t.Fatalf("last frame logged %q, want %q", got, want)
	}
}

// The rate is measured over the last rateWindow once a second has passed;
// pending is the consumers' count (read every 5 seconds), less what was
// exported since the sample before the count changed; idle_in divides the
// two.
func TestRunFiguresFollowTheSnapshots(t *testing.T) {
	var tr runTracker
	t0 := time.Unix(1000, 0)
	snap := func(exported, pending uint64, known bool) exporter.Snapshot {
		return exporter.Snapshot{Connector: "events", Exported: exported, Pending: pending, PendingKnown: known}
	}
	f := tr.observe(t0, snap(0, 0, false))
	if f.rateKnown || f.pendingKnown || f.idleKnown {
		t.Fatalf("first sample: %+v, want nothing known", f)
	}
	f = tr.observe(t0.Add(500*time.Millisecond), snap(1000, 100000, true))
	if f.rateKnown || f.pending != 99000 || f.idleKnown {
		t.Fatalf("at 0.5s: %+v, want pending 100000-1000, no rate yet", f)
	}
	f = tr.observe(t0.Add(2*time.Second), snap(20000, 100000, true))
	if !f.rateKnown || f.rate != 10000 || f.pending != 80000 || !f.idleKnown || f.idleIn != 8*time.Second {
		t.Fatalf("at 2s: %+v, want rate 10000/s, pending 100000-20000, idle in 8s", f)
	}
	// The consumers are read again: their count replaces the estimate.
	f = tr.observe(t0.Add(2250*time.Millisecond), snap(22500, 80000, true))
	if f.pending != 77500 || f.rate != 10000 {
		t.Fatalf("at 2.25s: %+v, want pending 80000-2500, rate 10000/s", f)
	}
	f = tr.observe(t0.Add(4750*time.Millisecond), snap(47500, 80000, true))
	if f.pending != 52500 {
		t.Fatalf("at 4.75s: %+v, want pending 80000-27500", f)
	}
	f = tr.observe(t0.Add(5*time.Second), snap(50000, 52000, true))
	if f.pending != 49500 || f.rate != 10000 {
		t.Fatalf("at 5s: %+v, want pending 52000-2500, rate 10000/s", f)
	}
	// Exported past the last count: pending stays at 0, never below.
	f = tr.observe(t0.Add(11*time.Second), snap(110000, 52000, true))
	if f.pending != 0 || !f.idleKnown || f.idleIn != 0 {
		t.Fatalf("at 11s: %+v, want pending 0 and idle now", f)
	}
	// Only the last rateWindow counts: nothing was exported in it.
	f = tr.observe(t0.Add(21*time.Second), snap(110000, 0, true))
	if f.rate != 0 || f.pending != 0 {
		t.Fatalf("at 21s: %+v, want rate 0 (nothing exported for 10s), pending 0", f)
	}
	if n := len(tr.samples); n > 3 {
		t.Fatalf("%d samples kept, want those of the last %s only", n, rateWindow)
	}
}

// The status line and the log lines of run -until-idle carry the same
// figures, for each connector.
func TestRunFrameShowsEveryConnector(t *testing.T) {
	f := runFrame([]runFigures{
		{connector: "events", exported: 1234567, pending: 765433, pendingKnown: true, rate: 98765.4, rateKnown: true, idleIn: 7750 * time.Millisecond, idleKnown: true},
		{connector: "audit", exported: 12},
		{connector: "logs", exported: 5000, pendingKnown: true, rate: 100, rateKnown: true, idleKnown: true, done: true},
	})
	want := "events: 1,234,567 exported, 765,433 pending, 98,765/s, idle in 8s | audit: 12 exported, ? pending | logs: 5,000 exported, 0 pending, 100/s, done"
	if f.line != want {
		t.Fatalf("status line\n%s\nwant\n%s", f.line, want)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: noTime}))
	for _, attrs := range f.logs {
		log.Info("progress", attrs...)
	}
	wantLog := "level=INFO msg=progress connector=events exported=1234567 pending=765433 rate=98765/s idle_in=8s\n" +
		"level=INFO msg=progress connector=audit exported=12\n" +
		"level=INFO msg=progress connector=logs exported=5000 pending=0 rate=100/s idle_in=0s\n"
	if buf.String() != wantLog {
		t.Fatalf("log lines\n%s\nwant\n%s", buf.String(), wantLog)
	}
}

func TestVerifyAndCompactFrames(t *testing.T) {
	v := verifyFrame("events", lake.VerifyCounts{Listed: 12000, Read: 11990, Bytes: 5 << 20, Problems: 1, Stage: "listing objects"})
	if want := "verify events (listing objects): 11,990 of 12,000 listed objects read, 5.0 MiB, 1 problem"; v.line != want {
		t.Fatalf("verify line %q, want %q", v.line, want)
	}
	c := compactFrame("events", lake.CompactCounts{Planned: 10, Done: 3})
	if want := "compact events: 3 of 10 groups done"; c.line != want {
		t.Fatalf("compact line %q, want %q", c.line, want)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: noTime}))
	log.Info("progress", v.logs[0]...)
	log.Info("progress", c.logs[0]...)
	want := `level=INFO msg=progress connector=events stage="listing objects" listed=12000 read=11990 bytes=5242880 problems=1` + "\n" +
		"level=INFO msg=progress connector=events groups_done=3 groups_planned=10\n"
	if buf.String() != want {
		t.Fatalf("log lines\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestFigureFormats(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 30: "3.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]time.Duration{1400 * time.Millisecond: time.Second, 2*time.Hour + 31*time.Second: 2*time.Hour + time.Minute} {
		if got := roundDuration(d); got != want {
			t.Errorf("roundDuration(%s) = %s, want %s", d, got, want)
		}
	}
}
