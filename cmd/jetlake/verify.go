package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// cmdVerify checks that every sequence in scope is in exactly one data
// object or in a loss marker.
func cmdVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "connector file or directory of *.toml files")
	from := fs.Uint64("from-seq", 0, "first stream sequence to check (default: the lowest any object or marker holds)")
	to := fs.Uint64("to-seq", 0, "last stream sequence to check (default: the last one the consumer was delivered or the lake holds)")
	deep := fs.Bool("deep", false, "read every object and check its records, not only names and metadata")
	quiet := fs.Bool("quiet", false, "no progress on stderr (a status line on a terminal, else a log line every 10s)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jetlake verify: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *to != 0 && *from > *to {
		fmt.Fprintf(stderr, "jetlake verify: -from-seq %d is after -to-seq %d\n", *from, *to)
		return exitUsage
	}
	conns, code, ok := loadConfig(*path, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	opts := lake.VerifyOptions{FromSeq: *from, ToSeq: *to, Deep: *deep}
	prog := newProgressOut(stderr)
	prog.log, _ = newLogger("text", "info", prog.logWriter(stderr))
	// Every connector is checked and reported, whatever happened to the
	// ones before it.
	allOK := true
	for _, c := range conns {
		stopProgress := func() {}
		if !*quiet {
			opts.Progress = &lake.VerifyProgress{}
			stopProgress = prog.watch(func(time.Time) progressFrame { return verifyFrame(c.Name, opts.Progress.Counts()) })
		}
		reports, err := lake.VerifyConnector(ctx, c, opts)
		stopProgress()
		if err != nil {
			fmt.Fprintf(stderr, "jetlake verify: connector %s: %v\n", c.Name, err)
			fmt.Fprintf(stdout, "connector %s: NOT CHECKED: %v\n", c.Name, err)
			allOK = false
			continue
		}
		for _, r := range reports {
			printReport(stdout, r)
			allOK = allOK && r.OK()
		}
	}
	if !allOK {
		return exitFailure
	}
	return exitOK
}

// rangeList lists ranges for a report, the first 50 of them.
func rangeList[R fmt.Stringer](rs []R) string {
	parts := make([]string, 0, min(len(rs), 51))
	for i, m := range rs {
		if i == 50 {
			parts = append(parts, fmt.Sprintf("... (%d ranges in all)", len(rs)))
			break
		}
		parts = append(parts, m.String())
	}
	return strings.Join(parts, ", ")
}

// maxProblems bounds the problem and overlap lines printed per stream.
const maxProblems = 100

func printReport(w io.Writer, r *lake.Report) {
	fmt.Fprintf(w, "connector %s, stream %s, consumer %s: sequences %s\n", r.Connector, r.Stream, r.Consumer, r.Scope)
	if r.Filtered {
		fmt.Fprintln(w, "  filtered consumer: checking the matching messages still in the stream")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintf(w, "  %d data objects holding %d sequences in scope, %d loss markers\n", r.Objects, r.Messages, len(r.Markers))
	if r.MetadataOnly > 0 {
		fmt.Fprintf(w, "  %d raw objects checked from their metadata only: raw records carry no sequence to read back\n", r.MetadataOnly)
	}
	if r.Rejected > 0 {
		fmt.Fprintf(w, "  %d rejected messages in scope, in %d objects under %s\n", r.RejectedMessages, r.Rejected, pathtemplate.KindPrefix("", pathtemplate.Rejected))
	}
	for _, m := range r.Markers {
		subject := ""
		if m.Subject != "" {
			subject = " subject " + m.Subject
		}
		if len(m.Ranges) > 1 {
			subject += fmt.Sprintf(" in %d ranges", len(m.Ranges))
		}
		fmt.Fprintf(w, "  LOST %s (%s, %d messages%s): %s\n", lossmarker.Range{First: m.FirstSeq, Last: m.LastSeq}, m.Reason, m.Count, subject, m.Error)
	}
	for i, p := range r.Problems {
		if i == maxProblems {
			fmt.Fprintf(w, "  ... (%d problems in all)\n", len(r.Problems))
			break
		}
		fmt.Fprintf(w, "  PROBLEM %s\n", p)
	}
	for _, o := range r.Overlaps {
		fmt.Fprintf(w, "  OVERLAP %s\n", o)
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "  MISSING %s\n", rangeList(r.Missing))
	}
	if r.OK() {
		fmt.Fprintln(w, "  OK: every sequence in scope is in exactly one data object or a loss marker")
	} else {
		fmt.Fprintln(w, "  FAILED")
	}
}
