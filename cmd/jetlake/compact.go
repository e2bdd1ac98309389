package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"path"
	"syscall"
	"time"

	"github.com/jetlake/jetlake/exporter/lake"
)

// cmdCompact rewrites the small data files of the closed partitions of the
// connectors' Iceberg tables, or with -dry-run shows what it would merge.
func cmdCompact(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "connector file or directory of *.toml files")
	dryRun := fs.Bool("dry-run", false, "show the groups of small files that would be merged, change nothing")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jetlake compact: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	conns, code, ok := loadConfig(*cfgPath, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	code = exitOK
	prog := newProgressOut(stderr)
	prog.log, _ = newLogger("text", "info", prog.logWriter(stderr))
	for _, c := range conns {
		if c.Iceberg == nil {
			fmt.Fprintf(stdout, "connector %s: writes no Iceberg table; nothing to compact\n", c.Name)
			continue
		}
		counts := &lake.CompactProgress{}
		stopProgress := prog.watch(func(time.Time) progressFrame { return compactFrame(c.Name, counts.Counts()) })
		rep, err := lake.CompactConnector(ctx, c, lake.CompactOptions{DryRun: *dryRun, OrphanAge: c.Iceberg.OrphanAge, Progress: counts})
		stopProgress()
		if rep == nil {
			rep = &lake.CompactReport{}
		}
		for _, r := range rep.Groups {
			g := r.Group
			switch {
			case *dryRun:
				fmt.Fprintf(stdout, "connector %s: would merge %d files (%d rows, %d bytes) in %s\n", c.Name, len(g.Files), g.Rows, g.Bytes, g.Partition)
			case r.Skipped != "":
				fmt.Fprintf(stdout, "connector %s: left %d files in %s: %s\n", c.Name, len(g.Files), g.Partition, r.Skipped)
			case r.Compacted != "":
				fmt.Fprintf(stdout, "connector %s: merged %d files (%d bytes) in %s into %s (%d bytes)\n", c.Name, len(g.Files), g.Bytes, g.Partition, path.Base(r.Compacted), r.Bytes)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "jetlake compact: connector %s: %v\n", c.Name, err)
			code = exitFailure
			continue
		}
		if len(rep.Groups) == 0 {
			fmt.Fprintf(stdout, "connector %s: no small files in closed partitions\n", c.Name)
		}
		if n := len(rep.Orphans); n > 0 {
			verb := "removed"
			if *dryRun {
				verb = "would remove"
			}
			fmt.Fprintf(stdout, "connector %s: %s %d orphan data files (in no snapshot, intent or plan, older than %s, written by this connector for this table), such as %s\n",
				c.Name, verb, n, c.Iceberg.OrphanAge, rep.Orphans[0])
		}
		if n := len(rep.Foreign); n > 0 {
			fmt.Fprintf(stdout, "connector %s: left %d files in no snapshot, intent or plan that this connector did not write for this table, such as %s\n",
				c.Name, n, rep.Foreign[0])
		}
		if rep.Expired > 0 {
			fmt.Fprintf(stdout, "connector %s: expired %d snapshots beyond keep_snapshots\n", c.Name, rep.Expired)
		}
		if rep.ExpireErr != nil {
			fmt.Fprintf(stderr, "jetlake compact: connector %s: %v\n", c.Name, rep.ExpireErr)
		}
	}
	return code
}
