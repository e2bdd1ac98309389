package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runMainArgs runs Main in this process and returns its exit code and output.
func runMainArgs(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Main(args, &o, &e)
	return code, o.String(), e.String()
}

func TestHelpListsEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, out, errOut := runMainArgs(args...)
		if code != 0 || errOut != "" {
			t.Fatalf("jetlake %q: exit %d, stderr %q", args, code, errOut)
		}
		if !strings.Contains(out, "Usage: jetlake <command> [arguments]\n") ||
			!strings.Contains(out, `Use "jetlake help <command>" for more information about a command.`) {
			t.Errorf("jetlake %q lacks the usage line or the pointer to help:\n%s", args, out)
		}
		for _, c := range commands {
			if !strings.Contains(out, "  "+c.name+" ") || !strings.Contains(out, " "+c.summary+"\n") {
				t.Errorf("jetlake %q does not list %s with its summary:\n%s", args, c.name, out)
			}
		}
	}
}

func TestNoArgumentsListsTheCommandsOnStderrAndExits2(t *testing.T) {
	code, out, errOut := runMainArgs()
	if code != 2 || out != "" || !strings.Contains(errOut, "Usage: jetlake <command> [arguments]") {
		t.Fatalf("jetlake: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestHelpCommandAndDashHPrintTheSameUsage(t *testing.T) {
	for _, c := range commands {
		code, help, errOut := runMainArgs("help", c.name)
		if code != 0 || errOut != "" {
			t.Fatalf("jetlake help %s: exit %d, stderr %q", c.name, code, errOut)
		}
		for _, h := range []string{"-h", "-help", "--help"} {
			code, out, errOut := runMainArgs(c.name, h)
			if code != 0 || errOut != "" || out != help {
				t.Errorf("jetlake %s %s: exit %d, stderr %q, stdout differs from jetlake help %s:\n%s", c.name, h, code, errOut, c.name, out)
			}
		}
		if !strings.HasPrefix(help, "usage: jetlake "+c.name) || !strings.Contains(help, c.long) ||
			!strings.Contains(help, "\nExample:\n\n  "+c.example+"\n") {
			t.Errorf("jetlake help %s lacks its usage line, text or example:\n%s", c.name, help)
		}
		if !strings.HasPrefix(c.example, "jetlake "+c.name) {
			t.Errorf("the example of %s, %q, does not run it", c.name, c.example)
		}
		if strings.Contains(c.args, "-config") && (!strings.Contains(help, "\nFlags:\n") || !strings.Contains(help, "\n  -config string\n")) {
			t.Errorf("jetlake help %s does not list -config:\n%s", c.name, help)
		}
	}
}

// Every example's flags are the command's: with -h after them, the flag
// package reads them all before it stops at -h, and a flag that does not
// exist or lacks its value fails there instead. The example of help, which
// takes a command and no flags, runs as it is.
func TestEveryExampleParses(t *testing.T) {
	for _, c := range commands {
		args := strings.Fields(c.example)[1:]
		if c.name != "help" {
			args = append(args, "-h")
		}
		code, out, errOut := runMainArgs(args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: jetlake ") {
			t.Errorf("jetlake %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
		if i := strings.Index(c.example, "-config "); i >= 0 {
			path := strings.Fields(c.example[i+len("-config "):])[0]
			if _, err := os.Stat(filepath.Join("..", "..", path)); err != nil {
				t.Errorf("the example of %s reads %s: %v", c.name, path, err)
			}
		}
	}
}

func TestUnknownCommandExits2NamingIt(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"help", "frobnicate"}} {
		code, out, errOut := runMainArgs(args...)
		if code != 2 || out != "" || !strings.Contains(errOut, `unknown command "frobnicate"`) ||
			!strings.Contains(errOut, "Usage: jetlake <command> [arguments]") {
			t.Errorf("jetlake %q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestBadFlagPrintsTheCommandsUsageOnStderrAndExits2(t *testing.T) {
	for _, c := range commands {
		code, out, errOut := runMainArgs(c.name, "-no-such-flag")
		if code != 2 || out != "" || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag\n"+c.usageLine()+"\n") ||
			!strings.Contains(errOut, `Run "jetlake help `+c.name+`" for more information.`) || strings.Contains(errOut, "Usage of") {
			t.Errorf("jetlake %s -no-such-flag: exit %d, stdout %q, stderr %q", c.name, code, out, errOut)
		}
	}
}

func TestReadmeCommandsTableNamesEveryCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Commands\n")
	if !ok {
		t.Fatal("README.md has no Commands section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, c := range commands {
		if !strings.Contains(section, "\n| `jetlake "+c.name) {
			t.Errorf("the commands table of README.md has no row for jetlake %s", c.name)
		}
	}
}
