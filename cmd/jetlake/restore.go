package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/plan"
	"github.com/jetlake/jetlake/exporter/restore"
	"github.com/jetlake/jetlake/lossmarker"
)

// subjectList is a flag that may be given more than once.
type subjectList []string

func (s *subjectList) String() string     { return strings.Join(*s, ",") }
func (s *subjectList) Set(v string) error { *s = append(*s, v); return nil }

// cmdRestore publishes what a connector exported of a stream back into a
// stream.
func cmdRestore(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "the connector file (one connector)")
	connector := fs.String("connector", "", "the connector of a file or directory that holds several")
	var o restore.Options
	fs.StringVar(&o.Stream, "stream", "", "the source stream (default: the connector's only stream)")
	created := fs.String("stream-created", "", "the source stream's creation time (RFC 3339), for a stream the lake holds several incarnations of (default: the newest)")
	fs.Int64Var(&o.Snapshot, "snapshot", 0, "of a connector with [iceberg]: the id of the table's snapshot to read (default: the current one)")
	fs.StringVar(&o.Target, "target", "", "the stream to publish to (required unless -dry-run)")
	natsURL := fs.String("nats-url", "", "the NATS server of the target stream (default: the connector's [nats] url, with its credentials)")
	fs.StringVar(&o.SubjectPrefix, "subject-prefix", "", "put PREFIX. before every restored subject")
	fs.Uint64Var(&o.FromSeq, "from-seq", 0, "first source sequence to restore")
	fs.Uint64Var(&o.ToSeq, "to-seq", 0, "last source sequence to restore")
	since := fs.String("since", "", "restore messages stored at or after this time (RFC 3339)")
	until := fs.String("until", "", "restore messages stored before this time (RFC 3339)")
	eventSince := fs.String("event-since", "", "restore messages whose event time (the connector's time_source) is at or after this time (RFC 3339)")
	eventUntil := fs.String("event-until", "", "restore messages whose event time is before this time (RFC 3339)")
	var subjects subjectList
	fs.Var(&subjects, "subject", "restore only messages whose original subject matches this filter (repeatable; * and > wildcards)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "read the lake and print what would be published; publish nothing")
	fs.BoolVar(&o.Rejected, "rejected", false, "restore the messages the connector rejected too, each with a Jetlake-Source-Rejected header saying why")
	fs.BoolVar(&o.Verify, "verify", false, "compare the target with the lake: every selected message once, with its subject, headers and payload; publish nothing")
	fs.IntVar(&o.BatchMessages, "batch", 1000, "messages per batch (at most 1000, the most the server takes by default)")
	fs.IntVar(&o.Readers, "readers", 4, "objects read at once")
	maxMemory := fs.Int64("max-memory-mib", restore.DefaultMaxMemory>>20, "MiB of records read ahead of publishing, at most (beyond one record an open object)")
	fs.IntVar(&o.ResumeScan, "resume-scan", 1_000_000, "messages of the target looked at, from its end back, for where an earlier restore stopped")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the restore to this file (for go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jetlake restore: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	var err error
	for _, t := range []struct {
		flag string
		s    string
		to   *time.Time
	}{{"stream-created", *created, &o.Created}, {"since", *since, &o.Since}, {"until", *until, &o.Until},
		{"event-since", *eventSince, &o.EventSince}, {"event-until", *eventUntil, &o.EventUntil}} {
		if t.s == "" {
			continue
		}
		if *t.to, err = time.Parse(time.RFC3339Nano, t.s); err != nil {
			fmt.Fprintf(stderr, "jetlake restore: -%s %q: want an RFC 3339 time such as 2026-12-01T00:00:00Z\n", t.flag, t.s)
			return exitUsage
		}
	}
	for _, s := range subjects {
		if err := config.CheckFilter(s); err != nil {
			fmt.Fprintf(stderr, "jetlake restore: -subject %q: %v\n", s, err)
			return exitUsage
		}
	}
	o.Subjects = subjects
	if *maxMemory < 1 {
		fmt.Fprintf(stderr, "jetlake restore: -max-memory-mib %d: want at least 1\n", *maxMemory)
		return exitUsage
	}
	o.MaxMemory = *maxMemory << 20
	switch {
	case o.Target == "" && (!o.DryRun || o.Verify):
		fmt.Fprintln(stderr, "jetlake restore: -target is required (but with -dry-run)")
		return exitUsage
	case o.Verify && o.DryRun:
		fmt.Fprintln(stderr, "jetlake restore: -verify and -dry-run exclude each other")
		return exitUsage
	case o.ToSeq != 0 && o.FromSeq > o.ToSeq:
		fmt.Fprintf(stderr, "jetlake restore: -from-seq %d is after -to-seq %d\n", o.FromSeq, o.ToSeq)
		return exitUsage
	case o.BatchMessages < 1 || o.BatchMessages > 1000:
		fmt.Fprintf(stderr, "jetlake restore: -batch %d: want 1 to 1000 (the server's largest atomic batch)\n", o.BatchMessages)
		return exitUsage
	}
	conns, code, ok := loadConfig(*path, stderr)
	if !ok {
		return code
	}
	c, err := pickConnector(conns, *connector)
	if err != nil {
		fmt.Fprintf(stderr, "jetlake restore: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	lc, err := restore.Connect(c, *natsURL, o.Target != "")
	if err != nil {
		fmt.Fprintf(stderr, "jetlake restore: %v\n", err)
		return exitFailure
	}
	defer lc.Close()
	prog := newProgressOut(stderr)
	prog.log, _ = newLogger("text", "info", prog.logWriter(stderr))
	o.Log = prog.log
	stopProgress := func() {}
	if !*quiet {
		o.Progress = &restore.Progress{}
		stopProgress = prog.watch(func(time.Time) progressFrame { return restoreFrame(c.Name, o.Progress) })
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "jetlake restore: -cpuprofile: %v\n", err)
			return exitFailure
		}
		defer stopProfile()
	}
	rep, err := restore.Run(ctx, c, lc.Store, lc.JS, o)
	stopProgress()
	if rep != nil {
		printRestore(stdout, rep, o.DryRun)
		fmt.Fprintf(stdout, "  %s\n", plan.RestoreCheck(c).Msg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "jetlake restore: connector %s: %v\n", c.Name, err)
		return exitFailure
	}
	if rep.Verify != nil && !rep.Verify.OK() {
		return exitFailure
	}
	return exitOK
}

// pickConnector returns the connector named name, or the only one.
func pickConnector(conns []*config.Connector, name string) (*config.Connector, error) {
	var names []string
	for _, c := range conns {
		if c.Name == name || name == "" && len(conns) == 1 {
			return c, nil
		}
		names = append(names, c.Name)
	}
	if name == "" {
		return nil, fmt.Errorf("the configuration holds %d connectors (%s): name one with -connector", len(conns), strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("no connector %s (there are %s)", name, strings.Join(names, ", "))
}

// restoreFrame is the progress of a restore.
func restoreFrame(connector string, p *restore.Progress) progressFrame {
	objects, read, published := p.Objects.Load(), p.Read.Load(), p.Published.Load()
	return progressFrame{
		line: fmt.Sprintf("restore %s: %s objects read, %s messages read, %s published",
			connector, groupDigits(uint64(objects)), groupDigits(uint64(read)), groupDigits(uint64(published))),
		logs: [][]any{{"connector", connector, "objects", objects, "read", read, "published", published}},
	}
}

// printRestore prints what a restore did, or would do.
func printRestore(w io.Writer, r *restore.Report, dry bool) {
	target := r.Target
	if target == "" {
		target = "(no target)"
	}
	fmt.Fprintf(w, "connector %s, stream %s (created %s) -> %s: sequences %s\n", r.Connector, r.Stream, r.Created.Format(time.RFC3339Nano), target, r.Scope)
	if s := r.Table; s != nil {
		which := "snapshot"
		if s.Current {
			which = "current snapshot"
		}
		fmt.Fprintf(w, "  Iceberg table %s, %s %d (%s, committed %s), %d data files in all\n", s.Table, which, s.ID, s.Operation, s.Time.Format(time.RFC3339Nano), s.Files)
	}
	for _, t := range r.Others {
		fmt.Fprintf(w, "  note: the lake also holds an incarnation created %s (-stream-created restores it)\n", t.Format(time.RFC3339Nano))
	}
	fmt.Fprintf(w, "  %d data objects read, %d messages selected\n", r.Objects, r.Selected)
	subs := make([]string, 0, len(r.BySubject))
	for s := range r.BySubject {
		subs = append(subs, s)
	}
	slices.Sort(subs)
	for i, s := range subs {
		if i == 20 {
			fmt.Fprintf(w, "  ... (%d subjects in all)\n", len(subs))
			break
		}
		fmt.Fprintf(w, "  subject %s: %d\n", s, r.BySubject[s])
	}
	if r.ResumedAfter > 0 {
		fmt.Fprintf(w, "  resumed after source sequence %d: %d selected messages were restored before\n", r.ResumedAfter, r.Already)
	}
	for _, m := range r.Lost {
		fmt.Fprintf(w, "  LOST %s (%s, %d messages): %s\n", lossmarker.Range{First: m.FirstSeq, Last: m.LastSeq}, m.Reason, m.Count, m.Error)
	}
	switch {
	case r.RejectedRestored > 0:
		fmt.Fprintf(w, "  %d rejected messages (of %d rejected objects in scope) selected, each with a Jetlake-Source-Rejected header\n", r.RejectedRestored, r.RejectedObjects)
	case r.RejectedObjects > 0:
		fmt.Fprintf(w, "  REJECTED %d objects of rejected messages in scope: not restored (-rejected restores them)\n", r.RejectedObjects)
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "  MISSING %s: in no data object, loss marker or rejected object\n", rangeList(r.Missing))
	}
	if r.Duplicates > 0 {
		fmt.Fprintf(w, "  %d records of sequences two objects hold were read once each (verify reports the overlaps)\n", r.Duplicates)
	}
	if v := r.Verify; v != nil {
		fmt.Fprintf(w, "  verify: %d selected messages checked, %d messages of this source in %s\n", v.Checked, v.Found, r.Target)
		for _, e := range v.Examples {
			fmt.Fprintf(w, "  PROBLEM %s\n", e)
		}
		if v.OK() {
			fmt.Fprintln(w, "  OK: every selected message is in the target once, with its subject, headers and payload")
		} else {
			fmt.Fprintf(w, "  FAILED: %d missing, %d duplicated, %d different, %d not in the lake\n", v.Missing, v.Duplicated, v.Differ, v.Extra)
		}
		return
	}
	switch {
	case dry:
		fmt.Fprintf(w, "  dry run: nothing published; %d messages would be\n", r.Selected-r.Already)
		if r.WhyNotKept != "" {
			fmt.Fprintf(w, "  the original sequences could not be kept: %s\n", r.WhyNotKept)
		}
		return
	case r.Publishing == restore.PublishChained:
		fmt.Fprintf(w, "  %d messages published in fast batches, each right after the one before (exactly once)\n", r.Published)
		if r.BatchesWithIDs > 0 {
			fmt.Fprintf(w, "  %d batches with message ids, after another publisher came first again and again\n", r.BatchesWithIDs)
		}
		if r.PublishedAlone > 0 {
			fmt.Fprintf(w, "  %d of them alone, with a message id, after another publisher came between the chain's messages again and again\n", r.PublishedAlone)
		}
	case r.Publishing == restore.PublishAtomic:
		fmt.Fprintf(w, "  %d messages published in atomic batches (exactly once)\n", r.Published)
	default:
		fmt.Fprintf(w, "  %d messages published with message ids: exactly once only within the target's duplicate window (allow_batched or allow_atomic on the target makes it exact)\n", r.Published)
	}
	if r.KeptSequences > 0 {
		fmt.Fprintf(w, "  original sequences kept up to %d\n", r.KeptSequences)
	}
	if r.WhyNotKept != "" {
		fmt.Fprintf(w, "  original sequences not kept: %s\n", r.WhyNotKept)
	}
	fmt.Fprintf(w, "  took %s\n", r.Took.Round(time.Millisecond))
}
