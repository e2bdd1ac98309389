// Command jetlake exports NATS JetStream streams to S3-compatible object
// storage as rotated files.
//
// Usage:
//
//	jetlake <command> [arguments]
//
// "jetlake help" lists the commands (run, validate, verify, plan, ddl,
// compact, version); "jetlake help COMMAND" or "jetlake COMMAND -h" shows a
// command's usage, flags and an example. Most commands take -config PATH,
// where PATH is a connector file or a directory of *.toml connector files.
// Exit codes: 0 success, 2 bad usage or invalid configuration, 1 any other
// failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/plan"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs the command line args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		listCommands(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		listCommands(stdout)
		return exitOK
	case "-version", "--version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "jetlake: unknown command %q\n\n", name)
		listCommands(stderr)
		return exitUsage
	}
	return runCommand(c, args[1:], stdout, stderr)
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// loadConfig loads PATH and prints every problem; ok is false when the
// command must exit with the returned code.
func loadConfig(path string, stderr io.Writer) ([]*config.Connector, int, bool) {
	if path == "" {
		fmt.Fprintln(stderr, "jetlake: -config PATH is required")
		return nil, exitUsage, false
	}
	conns, err := config.Load(path)
	if err != nil {
		var problems config.Errors
		if errors.As(err, &problems) {
			for _, p := range problems {
				fmt.Fprintln(stderr, p)
			}
			return nil, exitUsage, false
		}
		fmt.Fprintf(stderr, "jetlake: %v\n", err)
		return nil, exitUsage, false
	}
	return conns, exitOK, true
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "connector file or directory of *.toml files")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jetlake validate: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	conns, code, ok := loadConfig(*path, stderr)
	if !ok {
		return code
	}
	now := time.Now().UTC()
	for _, c := range conns {
		fmt.Fprint(stdout, summary(c, now))
	}
	return exitOK
}

// summary describes a connector in a few lines: per stream its consumer
// (or partition consumers) and a sample key where its data lands, then the
// output: the table and its catalog for an Iceberg connector, the format
// and path template for files.
func summary(c *config.Connector, now time.Time) string {
	var b strings.Builder
	state := ""
	if !c.Enabled {
		state = " (disabled)"
	}
	fmt.Fprintf(&b, "connector %s%s (%s): ok\n", c.Name, state, c.File)
	for _, s := range c.Streams {
		subjects := "(whole stream)"
		if len(s.Subjects) > 0 {
			subjects = strings.Join(s.Subjects, ", ")
		}
		fmt.Fprintf(&b, "  stream %s, subjects %s, consumer %s (ack_wait %s, max_ack_pending %d)\n",
			s.Stream, subjects, s.Consumer, s.AckWait, s.MaxAckPending)
		if s.Partitions > 1 {
			fmt.Fprintf(&b, "    partitions %d: consumers %s … %s, shared by leases (lease_ttl %s)\n", s.Partitions,
				config.PartitionConsumer(s.Consumer, 0), config.PartitionConsumer(s.Consumer, s.Partitions-1), s.LeaseTTL)
		}
		fmt.Fprintf(&b, "    sample %s: s3://%s/%s\n", sampleWhat(c), c.S3.Bucket, sampleKey(c, s, now))
	}
	if ib := c.Iceberg; ib != nil {
		parts := make([]string, len(ib.Partitioning))
		for i, p := range ib.Partitioning {
			parts[i] = p.String()
		}
		fmt.Fprintf(&b, "  iceberg table %s.%s, %s catalog %s, partitioned by %s\n",
			ib.Namespace, ib.Table, ib.Catalog, config.RedactURL(ib.URI), strings.Join(parts, ", "))
		fmt.Fprintf(&b, "  format parquet (data files), commit_interval %s\n", ib.CommitInterval)
	} else {
		fmt.Fprintf(&b, "  format %s, group_by %s, template %q\n", c.Output.Format, c.Output.GroupBy, c.Output.PathTemplate.String())
	}
	count := "no count limit"
	if c.Rotation.MaxMessagesPerFile > 0 {
		count = fmt.Sprintf("%d messages", c.Rotation.MaxMessagesPerFile)
	}
	fmt.Fprintf(&b, "  rotation: %s, %s, %s; max_buffered_bytes %s\n",
		config.FormatSize(c.Rotation.MaxFileSize), count, c.Rotation.MaxFileAge, config.FormatSize(c.Rotation.MaxBufferedBytes))
	return b.String()
}

// sampleWhat names what a connector's sample key is.
func sampleWhat(c *config.Connector) string {
	if c.Iceberg != nil {
		return "data file"
	}
	return "object"
}

// sampleKey is the key of a first file of stream s at now: a data file in
// its partition folder for an Iceberg connector, an object under the path
// template otherwise.
func sampleKey(c *config.Connector, s config.Stream, now time.Time) string {
	key, err := plan.SampleKey(c, s, now)
	if err != nil {
		return err.Error()
	}
	return key
}

// setMemoryLimit sets the Go runtime's soft memory limit from the
// connectors' budgets, unless GOMEMLIMIT says otherwise: the heap can grow to
// twice its live data between collections, and the budget counts live data.
func setMemoryLimit(conns []*config.Connector, log *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var budget int64
	for _, c := range conns {
		budget += c.Rotation.MaxBufferedBytes
	}
	// The budget counts what the buffers really hold (chunks, not record
	// lengths), so 1.5x leaves the collector room, and 8 MiB the client's
	// pull buffer and an encoder at work. Beyond the Go heap the process
	// holds about 45 MiB more (the program's code, with the Iceberg
	// catalogs' clients, and the runtime), which keeps it within 1.5x the
	// budget + 64 MiB (make bench).
	limit := budget + budget/2 + 8<<20
	debug.SetMemoryLimit(limit)
	log.Debug("memory limit set from the buffer budgets", "limit", config.FormatSize(limit))
}

func newLogger(format, level string, stderr io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		// Durations as Go duration strings ("1.5s"), as in text logs, not
		// integer nanoseconds.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				return slog.String(a.Key, a.Value.Duration().String())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", format)
}

// cmdRun runs the enabled connectors until a signal, a failure, or with
// -until-idle the end of their work.
func cmdRun(args []string, stderr io.Writer) int {
	f, ok := parseRunFlags(args, stderr)
	if !ok {
		return exitUsage
	}
	if f.cpuProfile != "" {
		stopProfile, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "jetlake run: cpu profile: %v\n", err)
			return exitFailure
		}
		defer stopProfile()
	}
	// -until-idle shows its progress (progress.go); on a terminal the
	// log goes through the status line.
	prog, logOut := newProgressOut(stderr), stderr
	if f.untilIdle {
		logOut = prog.logWriter(stderr)
	}
	log, err := newLogger(f.logFormat, f.logLevel, logOut)
	if err != nil {
		fmt.Fprintf(stderr, "jetlake run: %v\n", err)
		return exitUsage
	}
	prog.log = log
	conns, code, ok := loadConfig(f.path, stderr)
	if !ok {
		return code
	}
	enabled := enabledConnectors(conns)
	if len(enabled) == 0 {
		fmt.Fprintf(stderr, "jetlake run: %s has no enabled connector; set enabled = true in one\n", f.path)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		// A second signal ends the process at once.
		stop()
	}()

	setMemoryLimit(enabled, log)
	metrics := exporter.NewProcessMetrics()
	exps, err := newExporters(enabled, exporter.Options{Logger: log, UntilIdle: f.untilIdle, Version: versionString(), Metrics: metrics.Exporters(), LogPayloads: f.logPayloads})
	if err != nil {
		fmt.Fprintf(stderr, "jetlake run: %v\n", err)
		return exitFailure
	}
	if f.metricsAddr != "" {
		ready := make([]readiness, len(exps))
		for i, e := range exps {
			ready[i] = e
		}
		if err := serveMetrics(ctx, f.metricsAddr, metrics.Handler(), ready, log); err != nil {
			fmt.Fprintf(stderr, "jetlake run: %v\n", err)
			return exitUsage
		}
	}
	log.Info("jetlake starting", "version", versionString(), "connectors", len(exps), "until_idle", f.untilIdle)

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopProgress := func() {}
	if f.untilIdle {
		stopProgress = prog.watch(runProgress(exps))
	}
	errs := runExporters(rctx, cancel, exps, enabled)
	stopProgress()
	return runExit(ctx, errs, exps, enabled, f.untilIdle, log, stderr)
}

// runFlags are the flags of jetlake run.
type runFlags struct {
	path, logFormat, logLevel, metricsAddr, cpuProfile string
	untilIdle, logPayloads                             bool
}

// parseRunFlags parses the arguments of jetlake run. On a usage error it
// has written why to stderr and returns false.
func parseRunFlags(args []string, stderr io.Writer) (runFlags, bool) {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.path, "config", "", "connector file or directory of *.toml files")
	fs.BoolVar(&f.untilIdle, "until-idle", false, "exit once every consumer has nothing pending and everything is uploaded and acked")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this address, e.g. 127.0.0.1:9464 (off by default)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (for go tool pprof)")
	fs.BoolVar(&f.logPayloads, "log-payloads", false, "with -log-level debug, log each rejected message's reason with the value it quotes from the payload or a header (may be personal data; off: no payload bytes are logged)")
	if err := fs.Parse(args); err != nil {
		return f, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jetlake run: unexpected argument %q\n", fs.Arg(0))
		return f, false
	}
	return f, true
}

// startCPUProfile starts a CPU profile of the process into the file at
// path; the function it returns stops the profile and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// enabledConnectors returns the connectors of conns that are enabled.
func enabledConnectors(conns []*config.Connector) []*config.Connector {
	var enabled []*config.Connector
	for _, c := range conns {
		if c.Enabled {
			enabled = append(enabled, c)
		}
	}
	return enabled
}

// newExporters makes an exporter of each connector, all with opts.
func newExporters(conns []*config.Connector, opts exporter.Options) ([]*exporter.Exporter, error) {
	exps := make([]*exporter.Exporter, len(conns))
	for i, c := range conns {
		e, err := exporter.New(c, opts)
		if err != nil {
			return nil, err
		}
		exps[i] = e
	}
	return exps, nil
}

// runExporters runs every exporter until each has returned and returns
// their errors, by exporter. One failing connector stops the others, by
// cancelling ctx with its error: the process exits 1 and a supervisor
// restarts it, rather than running half of the config.
func runExporters(ctx context.Context, cancel context.CancelCauseFunc, exps []*exporter.Exporter, conns []*config.Connector) []error {
	var wg sync.WaitGroup
	errs := make([]error, len(exps))
	for i, e := range exps {
		wg.Go(func() {
			if err := e.Run(ctx); err != nil {
				errs[i] = fmt.Errorf("connector %s: %w", conns[i].Name, err)
				cancel(errs[i])
			}
		})
	}
	wg.Wait()
	return errs
}

// runExit reports how the run ended and returns the exit code: a failure
// of a connector, other than the cancelling that follows a signal on ctx;
// with untilIdle, connectors stopped before their work was done.
func runExit(ctx context.Context, errs []error, exps []*exporter.Exporter, conns []*config.Connector, untilIdle bool, log *slog.Logger, stderr io.Writer) int {
	for _, err := range errs {
		if err == nil || ctx.Err() != nil && errors.Is(err, context.Canceled) {
			continue
		}
		log.Error("stopped", "error", err)
		fmt.Fprintf(stderr, "jetlake: %v\n", err)
		return exitFailure
	}
	if untilIdle {
		if busy := notDone(exps, conns); len(busy) > 0 {
			// A backfill script reads the exit code: a run stopped
			// before its work was done has not exported everything.
			log.Error("stopped before every connector was idle; what is not exported stays in the streams, run again to finish", "connectors", strings.Join(busy, ","))
			fmt.Fprintf(stderr, "jetlake: stopped before %s had exported everything (-until-idle); run again to finish\n", strings.Join(busy, ", "))
			return exitFailure
		}
	}
	log.Info("jetlake stopped")
	return exitOK
}

// notDone names the connectors whose Run ended before their work was done.
func notDone(exps []*exporter.Exporter, enabled []*config.Connector) []string {
	var busy []string
	for i, e := range exps {
		if !e.Done() {
			busy = append(busy, enabled[i].Name)
		}
	}
	return busy
}
