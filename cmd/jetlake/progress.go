package main

import (
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress of long work (run -until-idle, verify, compact): on a terminal
// one status line rewritten in place; otherwise a log line every
// progressLogEvery. The figures come from the exporter and lake; this file
// only decides where and when they are shown.
const progressTick = 250 * time.Millisecond // how often figures are sampled and the status line redrawn

// progressLogEvery is how often progress is logged when stderr is not a
// terminal. Only the binary of the command's tests changes it
// (progress_fault.go).
var progressLogEvery = 10 * time.Second

// progressFrame is what progress shows at one moment: the status line of
// a terminal, and the attributes of the log lines (one per connector) of
// anything else.
type progressFrame struct {
	line string
	logs [][]any
}

// progressOut shows progress frames on stderr. With a terminal it draws
// the status line and is the writer of the log, so that a log line never
// lands in the middle of the status line: it clears the line before the
// log line, and the next sample draws it again below (a burst of log lines
// costs one redraw, not one each). Without a terminal it logs a frame
// every progressLogEvery. Safe for concurrent use.
type progressOut struct {
	mu    sync.Mutex
	term  io.Writer  // the terminal; nil when progress is logged
	width func() int // the terminal's columns; 0 when unknown
	line  string     // the status line last drawn
	shown bool       // ... and it is on screen, the cursor at its end
	log   *slog.Logger
	every time.Duration
	next  time.Time // when the next log line is due; zero before start
}

// newProgressOut returns the progress output of a command writing to
// stderr: the status line when stderr is a terminal (not TERM=dumb),
// else log lines. Set log before frames are shown.
func newProgressOut(stderr io.Writer) *progressOut {
	p := &progressOut{every: progressLogEvery}
	file := stderr
	if u, ok := file.(*flagUsage); ok {
		file = u.w // a command's stderr, as runCommand passes it
	}
	if f, ok := file.(*os.File); ok && os.Getenv("TERM") != "dumb" && term.IsTerminal(int(f.Fd())) {
		fd := int(f.Fd())
		p.term = stderr
		p.width = func() int {
			w, _, err := term.GetSize(fd)
			if err != nil {
				return 0
			}
			return w
		}
	}
	return p
}

// logWriter is where the command's log goes: through p on a terminal,
// straight to stderr otherwise.
func (p *progressOut) logWriter(stderr io.Writer) io.Writer {
	if p.term != nil {
		return p
	}
	return stderr
}

// Write writes a log line, with the status line cleared before it and
// drawn again after it.
func (p *progressOut) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		io.WriteString(p.term, "\r\x1b[K")
		p.shown = false
	}
	return p.term.Write(b)
}

// start notes when the work started: the first log line is due
// progressLogEvery later.
func (p *progressOut) start(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = now.Add(p.every)
}

// show shows f at now: draws its status line on a terminal, or logs it
// when a log line is due. A log line that is late (the process was
// stopped) is logged once, and the next is due progressLogEvery later.
func (p *progressOut) show(now time.Time, f progressFrame) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.term != nil {
		p.draw(f.line)
		return
	}
	if p.next.IsZero() {
		p.next = now.Add(p.every)
	}
	if now.Before(p.next) {
		return
	}
	p.logFrame(f, false)
	p.next = p.next.Add(p.every)
	if !now.Before(p.next) {
		p.next = now.Add(p.every)
	}
}

// finish shows the last frame of the work: its status line, ended with a
// newline, or its log lines, marked final (whether the work succeeded or not).
func (p *progressOut) finish(f progressFrame) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.term != nil {
		p.draw(f.line)
		io.WriteString(p.term, "\n")
		p.line, p.shown = "", false
		return
	}
	p.logFrame(f, true)
}

// draw rewrites the status line in place with line, cut to the
// terminal's width (a line that wraps can not be rewritten). p.mu is held.
func (p *progressOut) draw(line string) {
	if w := p.width(); w > 1 {
		line = cut(line, w-1)
	}
	if p.shown && line == p.line {
		return
	}
	io.WriteString(p.term, "\r"+line+"\x1b[K")
	p.line, p.shown = line, true
}

// logFrame logs each of f's log lines. p.mu is held.
func (p *progressOut) logFrame(f progressFrame, done bool) {
	if p.log == nil {
		return
	}
	for _, attrs := range f.logs {
		if done {
			attrs = append(attrs[:len(attrs):len(attrs)], "final", true)
		}
		p.log.Info("progress", attrs...)
	}
}

// watch samples the work's figures every progressTick and shows them until
// the returned stop is called; stop shows the last frame (finish) and
// returns once nothing more is shown. sample is never called twice at
// once.
func (p *progressOut) watch(sample func(now time.Time) progressFrame) (stop func()) {
	p.start(time.Now())
	quit, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(progressTick)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				p.show(now, sample(now))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-ended
			p.finish(sample(time.Now()))
		})
	}
}

// cut shortens s to at most n runes, marking the cut with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
