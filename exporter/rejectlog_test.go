package exporter

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/content"
)

// rejectRunner is hotRunner with a typed int64 column n, read for the path,
// that rejects what is not a number, and a log written to buf at level.
func rejectRunner(tb testing.TB, buf *bytes.Buffer, level slog.Level, payloads bool) *runner {
	tb.Helper()
	r, s := hotRunner(tb)
	e := r.session
	e.cfg.Output.PathTemplate = mustTemplate(tb, "{stream}/n={column:n}")
	e.cfg.Output.Columns = []config.Column{{Name: "n", Source: "n", Type: formats.TypeInt64}}
	e.cfg.Output.OnTypeError = formats.RejectTypeErrors
	var err error
	if e.content, err = content.New(&e.cfg.Output, false); err != nil {
		tb.Fatal(err)
	}
	e.sink = objectSink{cfg: e.cfg, content: true}
	e.log = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level}))
	s.log = e.log
	e.opts.LogPayloads = payloads
	return newRunner(e, []*streamWriter{s})
}

// rejectAll adds n messages whose n field holds secret, a string.
func rejectAll(r *runner, n int, secret string) {
	for i := range n {
		m := &fakeMsg{seq: uint64(i + 1), data: fmt.Appendf(nil, `{"n":%q}`, secret)}
		m.Reply()
		r.add(context.Background(), delivery{msg: m})
	}
}

func TestRejectedMessagesAreSummedUpInTheLogWithoutTheirPayload(t *testing.T) {
	const secret = "ada.lovelace@example.com"
	var buf bytes.Buffer
	r := rejectRunner(t, &buf, slog.LevelInfo, false)
	rejectAll(r, 1000, secret)
	if buf.Len() != 0 {
		t.Fatalf("the log while messages are rejected:\n%.1000s", buf.String())
	}
	start := r.rejected.since
	r.rejected.report(r.log, start.Add(rejectLogEvery-time.Millisecond), false, r.cfg.S3.Prefix)
	if buf.Len() != 0 {
		t.Fatalf("a summary before %s:\n%s", rejectLogEvery, buf.String())
	}
	r.rejected.report(r.log, start.Add(rejectLogEvery), false, r.cfg.S3.Prefix)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := `level=WARN msg="messages rejected" stream=S reason=type messages=1000 first_sequence=1 last_sequence=1000 over=10s under=p/_jetlake/rejected/S/`
	if len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Fatalf("log after %s:\n%s\nwant one line with %s", rejectLogEvery, buf.String(), want)
	}
	// Counting starts anew: nothing more to say until the next rejection.
	buf.Reset()
	r.rejected.report(r.log, start.Add(time.Hour), true, r.cfg.S3.Prefix)
	if buf.Len() != 0 {
		t.Fatalf("a summary of nothing:\n%s", buf.String())
	}
}

func TestRejectedMessagesGetADebugLineWithTheirValueOnlyWhenAsked(t *testing.T) {
	const secret = "ada.lovelace@example.com"
	for _, payloads := range []bool{false, true} {
		var buf bytes.Buffer
		r := rejectRunner(t, &buf, slog.LevelDebug, payloads)
		rejectAll(r, 10, secret)
		r.rejected.report(r.log, time.Now(), true, r.cfg.S3.Prefix)
		log := buf.String()
		if n := strings.Count(log, `msg="message rejected"`); n != 10 {
			t.Errorf("log-payloads %v: %d debug lines, want one per message, 10:\n%s", payloads, n, log)
		}
		if !payloads && !strings.Contains(log, `reason="column n (source n): a string is not an int64`) {
			t.Errorf("log-payloads %v: the debug lines lack the column and what is wrong:\n%s", payloads, log)
		}
		if strings.Contains(log, secret) != payloads {
			t.Errorf("log-payloads %v: the value is in the log: %v\n%s", payloads, strings.Contains(log, secret), log)
		}
	}
}
