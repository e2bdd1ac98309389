package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
)

// A command is one subcommand of jetlake. The list of commands, each
// command's help and the usage printed after a bad flag all come from the
// commands table, so no command can be missing from them.
type command struct {
	name    string
	summary string // one line, for the list of commands
	args    string // what follows the name on the usage line
	long    string // what it does, wrapped at 72 columns
	example string // a real invocation

	// run runs the command with the arguments after its name. It parses
	// them with a flag.FlagSet named after the command, writing to stderr,
	// before it does anything else: with -h the flag package then prints
	// the flags and run returns at once, which is how help learns them.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands is the table of jetlake's commands, in the order help lists
// them. It is filled in init because help reads it.
var commands []command

func init() {
	commands = []command{
		{
			name:    "run",
			summary: "export the enabled connectors' streams until stopped, or until idle",
			args:    "-config PATH [flags]",
			long: `Run runs every enabled connector of PATH in one process until SIGINT or
SIGTERM. Then it stops pulling, seals every buffer, uploads and acks what
it holds and exits 0 within shutdown_timeout; what it could not upload
stays unacked and JetStream redelivers it. A second signal ends it at
once. One failing connector stops the others, and the process exits 1.

With -until-idle it exits 0 once every consumer has nothing pending and
everything is uploaded and acked (for backfills and the demo); a signal
before that ends it with exit 1, naming the connectors not done.`,
			example: "jetlake run -config examples/local.toml -until-idle",
			run:     func(args []string, _, stderr io.Writer) int { return cmdRun(args, stderr) },
		},
		{
			name:    "validate",
			summary: "check connector files offline and summarise each connector",
			args:    "-config PATH",
			long: `Validate checks the connector files of PATH without touching the network.
It prints a summary of each connector (streams, subjects, consumer
settings, partition consumers, rotation, the output and a sample key of
where its data lands) and exits 0, or prints every problem as
FILE:LINE: KEY: what is wrong and what is allowed, and exits 2.`,
			example: "jetlake validate -config examples/",
			run:     cmdValidate,
		},
		{
			name:    "verify",
			summary: "check that every sequence is in exactly one object or a loss marker",
			args:    "-config PATH [flags]",
			long: `Verify lists the objects and loss markers of each stream of the
connectors of PATH and checks that every stream sequence in scope is in
exactly one data object or in a loss marker. It prints a report per
stream, with the lost ranges, overlaps and missing sequences, and exits
1 if any stream fails or can not be checked. The scope runs from the
lowest sequence any object or marker holds to the last one the consumer
was delivered or the highest one the lake holds, unless -from-seq and
-to-seq say otherwise; -deep reads
every object back and checks its records, not only names and metadata.`,
			example: "jetlake verify -config examples/local.toml -deep",
			run:     cmdVerify,
		},
		{
			name:    "restore",
			summary: "publish what a connector exported of a stream back into a stream, exactly once",
			args:    "-config PATH -target STREAM [flags]",
			long: `Restore reads the data objects a connector wrote of one stream and
publishes the selected messages (by -from-seq/-to-seq, -since/-until and
-subject) in stream sequence order into the target stream, with their
subjects (after -subject-prefix), headers and payloads, and headers that
name where each came from. Into a stream with allow_batched it publishes
a chain of fast batches, each message right after the one before; with
allow_atomic, atomic batches, each right after the stream's last
sequence: run again after a kill, it finds where it stopped and
publishes every message once. Into an empty stream and over a range without gaps, the messages
keep their sequence numbers. It reports loss markers, rejected messages
and missing sequences in the range; -dry-run reads and reports without
publishing. For a connector with [iceberg] it reads the data files of the
table's current snapshot, or of the one -snapshot names, and no others.
It exits 1 when it could not finish.`,
			example: "jetlake restore -config examples/local.toml -target EVENTS -dry-run",
			run:     cmdRestore,
		},
		{
			name:    "plan",
			summary: "dry run: check everything online, print the permissions needed",
			args:    "-config PATH [flags]",
			long: `Plan shows what run would do with the connectors of PATH and checks,
online, everything it needs: the effective configuration, sample keys,
the NATS server, stream and consumer settings, the bucket, a probe
object and conditional writes. It prints the least-privilege S3 policy
and the NATS permissions the connector needs. It changes nothing but
the probe object under <prefix>/_jetlake/probe/, which -cleanup removes.
It exits 1 when a check fails.`,
			example: "jetlake plan -config examples/local.toml -cleanup",
			run:     cmdPlan,
		},
		{
			name:    "ddl",
			summary: "print the CREATE TABLE that reads a connector's objects",
			args:    "-config PATH -engine athena|trino [flags]",
			long: `The ddl command prints the CREATE TABLE statement with which Athena or
Trino reads the objects of each connector of PATH, with partitions
projected from its path template; for an Iceberg table, what the engine
needs to read it from a catalog. It needs no network: the statement
follows from the configuration alone. Notes for the person running it go
to stderr. It exits 1 for a connector whose output no table can read.`,
			example: "jetlake ddl -config examples/local.toml -engine athena -table analytics.events",
			run:     cmdDDL,
		},
		{
			name:    "compact",
			summary: "merge the small data files of Iceberg tables' closed partitions",
			args:    "-config PATH [flags]",
			long: `Compact rewrites the small data files of the closed partitions of the
Iceberg tables of the connectors of PATH into larger ones, removes
orphan data files this connector wrote and expires snapshots beyond
keep_snapshots. With -dry-run it shows what it would merge and remove
and changes nothing. A connector that writes no Iceberg table is skipped.`,
			example: "jetlake compact -config examples/iceberg.toml -dry-run",
			run:     cmdCompact,
		},
		{
			name:    "version",
			summary: "print the version",
			long:    `Version prints the version of jetlake.`,
			example: "jetlake version",
			run:     cmdVersion,
		},
		{
			name:    "help",
			summary: "list the commands, or show a command's usage",
			args:    "[command]",
			long: `Help lists the commands, or with a command shows its usage, its flags
and an example. "jetlake COMMAND -h" shows the same.`,
			example: "jetlake help run",
			run:     cmdHelp,
		},
	}
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// usageLine is the command's usage line.
func (c *command) usageLine() string {
	line := "usage: jetlake " + c.name
	if c.args != "" {
		line += " " + c.args
	}
	return line
}

// listCommands writes what jetlake is and its commands.
func listCommands(w io.Writer) {
	var b strings.Builder
	b.WriteString("jetlake exports NATS JetStream streams to S3-compatible object storage.\n\n")
	b.WriteString("Usage: jetlake <command> [arguments]\n\nThe commands are:\n\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.name, c.summary)
	}
	b.WriteString("\nPATH is a connector file or a directory of *.toml connector files.\n")
	b.WriteString("Exit codes: 0 success, 2 bad usage or invalid configuration, 1 any other failure.\n\n")
	b.WriteString(`Use "jetlake help <command>" for more information about a command.` + "\n")
	io.WriteString(w, b.String())
}

// printHelp writes the command's help: its usage line, what it does, its
// flags as the flag package prints them, and an example.
func printHelp(w io.Writer, c *command, flags string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n", c.usageLine(), c.long)
	if flags != "" {
		fmt.Fprintf(&b, "\nFlags:\n%s", flags)
	}
	fmt.Fprintf(&b, "\nExample:\n\n  %s\n", c.example)
	io.WriteString(w, b.String())
}

// printUsage writes the command's usage after a bad flag.
func printUsage(w io.Writer, c *command, flags string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", c.usageLine())
	if flags != "" {
		fmt.Fprintf(&b, "\nFlags:\n%s", flags)
	}
	fmt.Fprintf(&b, "\nRun \"jetlake help %s\" for more information.\n", c.name)
	io.WriteString(w, b.String())
}

// runCommand runs c with args. Where the flag package would print its own
// usage it prints c's: the help on stdout with exit 0 for -h, the usage on
// stderr after a bad flag.
func runCommand(c *command, args []string, stdout, stderr io.Writer) int {
	u := &flagUsage{w: stderr, head: "Usage of " + c.name + ":\n"}
	code := c.run(args, stdout, u)
	help, started, flags := u.result()
	switch {
	case help:
		printHelp(stdout, c, flags)
		return exitOK
	case started:
		printUsage(stderr, c, flags)
	}
	return code
}

// flagUsage is a command's stderr. It passes everything through until the
// flag package starts its usage text ("Usage of NAME:"), and keeps that
// text, the flags, for jetlake to print its own usage with. The text is -h
// when nothing came before it; after a bad flag it follows the error.
type flagUsage struct {
	w    io.Writer
	head string

	mu      sync.Mutex // run's goroutines log through it
	wrote   bool       // something passed through
	started bool       // the usage text began
	help    bool       // ... with nothing before it
	flags   bytes.Buffer
}

func (u *flagUsage) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.started:
		return u.flags.Write(p)
	case string(p) == u.head:
		u.started, u.help = true, !u.wrote
		return len(p), nil
	}
	u.wrote = true
	return u.w.Write(p)
}

func (u *flagUsage) result() (help, started bool, flags string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.help, u.started, u.flags.String()
}

// cmdHelp lists the commands, or shows the help of the command it names.
func cmdHelp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("help", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	switch fs.NArg() {
	case 0:
		listCommands(stdout)
		return exitOK
	case 1:
	default:
		fmt.Fprintf(stderr, "jetlake help: unexpected argument %q\n", fs.Arg(1))
		return exitUsage
	}
	c := lookup(fs.Arg(0))
	if c == nil {
		fmt.Fprintf(stderr, "jetlake help: unknown command %q\n\n", fs.Arg(0))
		listCommands(stderr)
		return exitUsage
	}
	return runCommand(c, []string{"-h"}, stdout, stderr)
}

// cmdVersion prints the version. Arguments other than flags are ignored.
func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	fmt.Fprintln(stdout, "jetlake", versionString())
	return exitOK
}
