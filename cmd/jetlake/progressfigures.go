package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/lake"
)

// rateWindow is how far back the export rate is measured.
const rateWindow = 10 * time.Second

// runTracker turns the snapshots of one connector into the figures of its
// progress: the export rate over the last rateWindow, and the pending
// count between the runner's reads of the consumers (every 5 s): the last
// count, less what was exported since the sample before it showed (the
// consumers were read between the two).
type runTracker struct {
	samples []rateSample // oldest first, the first at or before now - rateWindow
	// The pending count of the last snapshots, and what was exported at
	// the sample before it first showed.
	anchorPending, anchorExported uint64
	anchored                      bool
	lastExported                  uint64 // at the previous sample
}

type rateSample struct {
	at       time.Time
	exported uint64
}

// runFigures are what progress shows of one connector of run -until-idle.
type runFigures struct {
	connector    string
	exported     uint64
	pending      uint64
	pendingKnown bool
	rate         float64 // messages exported a second, once rateKnown
	rateKnown    bool    // a second has passed since the first snapshot
	idleIn       time.Duration
	idleKnown    bool
	done         bool
}

// observe takes the connector's snapshot at now and returns its figures.
func (t *runTracker) observe(now time.Time, s exporter.Snapshot) runFigures {
	f := runFigures{connector: s.Connector, exported: s.Exported, done: s.Done}
	prev := s.Exported
	if len(t.samples) > 0 {
		prev = t.lastExported
	}
	t.lastExported = s.Exported
	t.samples = append(t.samples, rateSample{at: now, exported: s.Exported})
	for len(t.samples) > 1 && !t.samples[1].at.After(now.Add(-rateWindow)) {
		t.samples = t.samples[1:]
	}
	if first := t.samples[0]; now.Sub(first.at) >= time.Second && s.Exported >= first.exported {
		f.rate, f.rateKnown = float64(s.Exported-first.exported)/now.Sub(first.at).Seconds(), true
	}
	if s.PendingKnown {
		if !t.anchored || s.Pending != t.anchorPending {
			t.anchorPending, t.anchorExported, t.anchored = s.Pending, prev, true
		}
		f.pending, f.pendingKnown = t.anchorPending-min(t.anchorPending, s.Exported-t.anchorExported), true
		switch {
		case f.pending == 0:
			f.idleKnown = true
		case f.rateKnown && f.rate > 0:
			f.idleIn, f.idleKnown = time.Duration(float64(f.pending)/f.rate*float64(time.Second)), true
		}
	}
	return f
}

// runFrame is the frame of run -until-idle's connectors.
func runFrame(figs []runFigures) progressFrame {
	var f progressFrame
	parts := make([]string, len(figs))
	for i, g := range figs {
		line := fmt.Sprintf("%s: %s exported, ", g.connector, groupDigits(g.exported))
		attrs := []any{"connector", g.connector, "exported", g.exported}
		if g.pendingKnown {
			line += groupDigits(g.pending) + " pending"
			attrs = append(attrs, "pending", g.pending)
		} else {
			line += "? pending"
		}
		if g.rateKnown {
			rate := uint64(g.rate + 0.5)
			line += ", " + groupDigits(rate) + "/s"
			attrs = append(attrs, "rate", strconv.FormatUint(rate, 10)+"/s")
		}
		if g.idleKnown && !g.done {
			idle := roundDuration(g.idleIn).String()
			if g.pending > 0 && g.idleIn < time.Second {
				idle = "<1s"
			}
			line += ", idle in " + idle
		}
		if g.done {
			line += ", done"
		}
		parts[i] = line
		if g.idleKnown {
			attrs = append(attrs, "idle_in", roundDuration(g.idleIn))
		}
		f.logs = append(f.logs, attrs)
	}
	f.line = strings.Join(parts, " | ")
	return f
}

// runProgress samples the exporters of run -until-idle.
func runProgress(exps []*exporter.Exporter) func(now time.Time) progressFrame {
	trackers := make([]runTracker, len(exps))
	return func(now time.Time) progressFrame {
		figs := make([]runFigures, len(exps))
		for i, e := range exps {
			figs[i] = trackers[i].observe(now, e.Snapshot())
		}
		return runFrame(figs)
	}
}

// verifyFrame is the frame of verify checking connector.
func verifyFrame(connector string, c lake.VerifyCounts) progressFrame {
	stage := ""
	if c.Stage != "" {
		stage = " (" + c.Stage + ")"
	}
	return progressFrame{
		line: fmt.Sprintf("verify %s%s: %s of %s listed objects read, %s, %s %s",
			connector, stage, groupDigits(uint64(c.Read)), groupDigits(uint64(c.Listed)), humanBytes(c.Bytes), groupDigits(uint64(c.Problems)), plural(int(c.Problems), "problem", "problems")),
		logs: [][]any{{"connector", connector, "stage", c.Stage, "listed", c.Listed, "read", c.Read, "bytes", c.Bytes, "problems", c.Problems}},
	}
}

// compactFrame is the frame of compact working on connector.
func compactFrame(connector string, c lake.CompactCounts) progressFrame {
	return progressFrame{
		line: fmt.Sprintf("compact %s: %s of %s %s done", connector, groupDigits(uint64(c.Done)), groupDigits(uint64(c.Planned)), plural(int(c.Planned), "group", "groups")),
		logs: [][]any{{"connector", connector, "groups_done", c.Done, "groups_planned", c.Planned}},
	}
}

// groupDigits writes n with a comma between groups of three digits.
func groupDigits(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// humanBytes writes n bytes in binary units, one decimal from KiB on.
func humanBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, unit := float64(n)/1024, 0
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	for v >= 1024 && unit < len(units)-1 {
		v /= 1024
		unit++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[unit]
}

// roundDuration rounds d for people: to the second, to the minute past an
// hour.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
