// Command jetlake-testtimes prints the output of go test as go test prints
// it without -json, and ends with the time of each package and a table of
// the slowest tests. make test runs its go test commands through it.
//
// It reads "go test -json" on its standard input, or runs the go test
// commands given as arguments side by side, each with -json added, and
// reads each one's output:
//
//	go test -json ./... | jetlake-testtimes
//	jetlake-testtimes "nice go test -race ./formats/..." "go test ./..."
//
// A command is split at spaces (no quoting); its standard error passes
// through. What it prints as the events come: the output of a test only
// when the test fails (with -v, every line), the package lines ("ok",
// "FAIL", "?"), whatever a package prints outside its tests, and build
// errors. The output of a test that never ended (a panic, a timeout) is
// printed when its package ends. Lines are printed as they were written,
// so a failure reads as it does without -json. In the tables, a package or
// test of a command run with -race is marked so.
//
// It exits 1 when a test, a package, a build or a command failed, or when
// the input could not be read; otherwise 0.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	top := flag.Int("top", 10, "how many of the slowest tests the table shows")
	verbose := flag.Bool("v", false, "print the output of every test, as go test -v does")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), `usage: go test -json ./... | jetlake-testtimes [-top n] [-v]
       jetlake-testtimes [-top n] [-v] "go test ..." ...`)
		flag.PrintDefaults()
	}
	flag.Parse()
	r := newReport(os.Stdout, *verbose)
	start := time.Now()
	if flag.NArg() == 0 {
		if err := r.read(os.Stdin, ""); err != nil {
			fmt.Fprintf(os.Stderr, "jetlake-testtimes: %v\n", err)
			r.fail()
		}
	} else {
		var wg sync.WaitGroup
		for _, line := range flag.Args() {
			wg.Go(func() {
				if err := r.run(line); err != nil {
					r.mu.Lock()
					fmt.Fprintf(r.out, "jetlake-testtimes: %s: %v\n", line, err)
					r.mu.Unlock()
					r.fail()
				}
			})
		}
		wg.Wait()
	}
	r.summary(os.Stdout, *top, time.Since(start))
	if r.failed {
		os.Exit(1)
	}
}

// goTestArgs returns the words of a go test command line with -json added
// after "test", and whether it runs with the race detector.
func goTestArgs(line string) (args []string, race bool, err error) {
	words := strings.Fields(line)
	i := slices.Index(words, "test")
	if i < 1 || words[i-1] != "go" {
		return nil, false, fmt.Errorf("not a go test command")
	}
	if !slices.Contains(words, "-json") {
		words = slices.Insert(words, i+1, "-json")
	}
	return words, slices.Contains(words[i:], "-race"), nil
}

// run runs a go test command and reads its events.
func (r *report) run(line string) error {
	args, race, err := goTestArgs(line)
	if err != nil {
		return err
	}
	label := ""
	if race {
		label = " (race)"
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	readErr := r.read(out, label)
	if err := cmd.Wait(); err != nil {
		return err
	}
	return readErr
}

// event is one line of go test -json (see go doc test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail
}

// result is a test's or a package's end.
type result struct {
	Package, Test string
	Action        string // pass, fail or skip
	Elapsed       time.Duration
}

// key names a test of a package of one stream of events: the label keeps
// apart a package that a race and a plain run both test.
type key struct{ label, pkg, test string }

// report follows the events of one or more go test runs. Its methods are
// safe for concurrent use.
type report struct {
	out     io.Writer
	verbose bool

	mu     sync.Mutex
	held   map[key][]string // output of running tests
	order  map[key][]key    // the tests of a package ({label, pkg, ""}), in the order they started
	tests  []result
	pkgs   []result
	failed bool
}

func newReport(out io.Writer, verbose bool) *report {
	return &report{out: out, verbose: verbose, held: map[key][]string{}, order: map[key][]key{}}
}

func (r *report) fail() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
}

// read handles every event of in; label marks its packages in the tables.
// A line that is not JSON is printed as it is: go test writes some errors
// that way.
func (r *report) read(in io.Reader, label string) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		r.mu.Lock()
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintf(r.out, "%s\n", line)
		} else {
			r.event(ev, label)
		}
		r.mu.Unlock()
	}
	return sc.Err()
}

// event handles one event; the caller holds mu.
func (r *report) event(ev event, label string) {
	switch ev.Action {
	case "build-output":
		io.WriteString(r.out, ev.Output)
		return
	case "build-fail":
		r.failed = true
		return
	}
	pkg := key{label, ev.Package, ""}
	if ev.Test == "" {
		r.packageEvent(ev, pkg)
		return
	}
	k := key{label, ev.Package, ev.Test}
	switch ev.Action {
	case "run":
		if _, ok := r.held[k]; !ok {
			r.held[k] = nil
			r.order[pkg] = append(r.order[pkg], k)
		}
	case "output":
		if r.verbose {
			io.WriteString(r.out, ev.Output)
			return
		}
		r.held[k] = append(r.held[k], ev.Output)
	case "pass", "fail", "skip":
		if ev.Action == "fail" {
			r.failed = true
			r.flush(k)
		}
		delete(r.held, k)
		r.tests = append(r.tests, result{ev.Package + label, ev.Test, ev.Action, seconds(ev.Elapsed)})
	}
}

// packageEvent handles an event of a package outside its tests.
func (r *report) packageEvent(ev event, pkg key) {
	switch ev.Action {
	case "output":
		if ev.Output == "FAIL\n" || strings.HasPrefix(ev.Output, "FAIL\t") || strings.HasPrefix(ev.Output, "ok  \t") {
			r.unfinished(pkg) // the test binary has ended
		}
		if ev.Output == "PASS\n" && !r.verbose {
			return // go test without -v prints only "ok" for a package that passed
		}
		io.WriteString(r.out, ev.Output)
	case "pass", "fail", "skip":
		if ev.Action == "fail" {
			r.failed = true
		}
		r.unfinished(pkg)
		delete(r.order, pkg)
		r.pkgs = append(r.pkgs, result{ev.Package + pkg.label, "", ev.Action, seconds(ev.Elapsed)})
	}
}

// unfinished prints the output of the tests of pkg that never ended (a
// panic, a timeout): it says why.
func (r *report) unfinished(pkg key) {
	for _, k := range r.order[pkg] {
		if _, running := r.held[k]; running {
			r.flush(k)
			delete(r.held, k)
		}
	}
}

// flush prints the held output of a test.
func (r *report) flush(k key) {
	for _, s := range r.held[k] {
		io.WriteString(r.out, s)
	}
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(10 * time.Millisecond)
}

// summary prints the packages that ran tests, slowest first, the top
// slowest top-level tests, and how long the whole took (took, zero to
// leave it out).
func (r *report) summary(out io.Writer, top int, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pkgs := slices.DeleteFunc(slices.Clone(r.pkgs), func(p result) bool { return p.Action == "skip" })
	slices.SortStableFunc(pkgs, func(a, b result) int { return cmp.Compare(b.Elapsed, a.Elapsed) })
	if len(pkgs) > 0 {
		fmt.Fprintf(out, "\nPackage times (packages run side by side, so they add up to more than the run took):\n")
		for _, p := range pkgs {
			fmt.Fprintf(out, "  %7.1fs  %-4s  %s\n", p.Elapsed.Seconds(), p.Action, p.Package)
		}
	}
	// A test's time is its own or, when longer, its slowest subtest's: the
	// time go test gives a test leaves out its parallel subtests.
	slowest := map[[2]string]time.Duration{}
	for _, t := range r.tests {
		top, _, _ := strings.Cut(t.Test, "/")
		k := [2]string{t.Package, top}
		slowest[k] = max(slowest[k], t.Elapsed)
	}
	var tests []result
	for _, t := range r.tests {
		if !strings.Contains(t.Test, "/") {
			t.Elapsed = slowest[[2]string{t.Package, t.Test}]
			tests = append(tests, t)
		}
	}
	slices.SortStableFunc(tests, func(a, b result) int { return cmp.Compare(b.Elapsed, a.Elapsed) })
	tests = tests[:min(top, len(tests))]
	if len(tests) > 0 {
		fmt.Fprintf(out, "\nSlowest %d tests:\n", len(tests))
		for _, t := range tests {
			fmt.Fprintf(out, "  %7.1fs  %-4s  %s %s\n", t.Elapsed.Seconds(), t.Action, t.Package, t.Test)
		}
	}
	if took > 0 {
		verdict := "ok"
		if r.failed {
			verdict = "FAIL"
		}
		fmt.Fprintf(out, "\n%s: the tests took %s in all\n", verdict, took.Round(time.Second))
	}
}
