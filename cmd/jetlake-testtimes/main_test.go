package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A run of two packages: one passes, with a subtest and a skip; the other
// has a failing subtest, a test that never ended, and output of its own.
const events = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestFast"}
{"Action":"output","Package":"ex/a","Test":"TestFast","Output":"=== RUN   TestFast\n"}
{"Action":"output","Package":"ex/a","Test":"TestFast","Output":"quiet log of a passing test\n"}
{"Action":"output","Package":"ex/a","Test":"TestFast","Output":"--- PASS: TestFast (0.20s)\n"}
{"Action":"pass","Package":"ex/a","Test":"TestFast","Elapsed":0.2}
{"Action":"run","Package":"ex/a","Test":"TestSlow"}
{"Action":"run","Package":"ex/a","Test":"TestSlow/sub"}
{"Action":"pass","Package":"ex/a","Test":"TestSlow/sub","Elapsed":40}
{"Action":"pass","Package":"ex/a","Test":"TestSlow","Elapsed":41.5}
{"Action":"run","Package":"ex/a","Test":"TestParallelSubtests"}
{"Action":"run","Package":"ex/a","Test":"TestParallelSubtests/one"}
{"Action":"run","Package":"ex/a","Test":"TestParallelSubtests/two"}
{"Action":"pass","Package":"ex/a","Test":"TestParallelSubtests","Elapsed":0.01}
{"Action":"pass","Package":"ex/a","Test":"TestParallelSubtests/one","Elapsed":2}
{"Action":"pass","Package":"ex/a","Test":"TestParallelSubtests/two","Elapsed":2.5}
{"Action":"run","Package":"ex/a","Test":"TestSkipped"}
{"Action":"skip","Package":"ex/a","Test":"TestSkipped","Elapsed":0}
{"Action":"output","Package":"ex/a","Output":"PASS\n"}
{"Action":"output","Package":"ex/a","Output":"ok  \tex/a\t42.000s\n"}
{"Action":"pass","Package":"ex/a","Elapsed":42}
this line is not JSON
{"Action":"run","Package":"ex/b","Test":"TestBroken"}
{"Action":"output","Package":"ex/b","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"run","Package":"ex/b","Test":"TestBroken/case"}
{"Action":"output","Package":"ex/b","Test":"TestBroken/case","Output":"    b_test.go:9: want 1, got 2\n"}
{"Action":"output","Package":"ex/b","Test":"TestBroken/case","Output":"    --- FAIL: TestBroken/case (3.00s)\n"}
{"Action":"fail","Package":"ex/b","Test":"TestBroken/case","Elapsed":3}
{"Action":"output","Package":"ex/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (3.00s)\n"}
{"Action":"fail","Package":"ex/b","Test":"TestBroken","Elapsed":3}
{"Action":"run","Package":"ex/b","Test":"TestHangs"}
{"Action":"output","Package":"ex/b","Test":"TestHangs","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"ex/b","Output":"FAIL\tex/b\t5.000s\n"}
{"Action":"fail","Package":"ex/b","Elapsed":5}
`

func TestFailuresStreamAsUsualAndTheSlowestTestsEndTheReport(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out, false)
	if err := r.read(strings.NewReader(events), ""); err != nil {
		t.Fatal(err)
	}
	r.summary(&out, 3, 0)
	got := out.String()
	for _, want := range []string{
		"ok  \tex/a\t42.000s\n",
		"this line is not JSON\n",
		"    b_test.go:9: want 1, got 2\n    --- FAIL: TestBroken/case (3.00s)\n",
		"--- FAIL: TestBroken (3.00s)\n",
		"panic: test timed out after 1s\nFAIL\tex/b\t5.000s\n",
		"Package times",
		"     42.0s  pass  ex/a\n",
		"      5.0s  fail  ex/b\n",
		"Slowest 3 tests:\n     41.5s  pass  ex/a TestSlow\n      3.0s  fail  ex/b TestBroken\n      2.5s  pass  ex/a TestParallelSubtests\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, never := range []string{"quiet log of a passing test", "TestSlow/sub", "TestFast (", "PASS\n"} {
		if strings.Contains(got, never) {
			t.Errorf("output has %q:\n%s", never, got)
		}
	}
	if !r.failed {
		t.Error("a failing test did not make the report fail")
	}
}

func TestAPassingRunDoesNotFailAndVerbosePrintsEveryTest(t *testing.T) {
	pass, _, _ := strings.Cut(events, "this line")
	var out bytes.Buffer
	r := newReport(&out, true)
	if err := r.read(strings.NewReader(pass), ""); err != nil {
		t.Fatal(err)
	}
	if r.failed {
		t.Error("a passing run failed")
	}
	if !strings.Contains(out.String(), "quiet log of a passing test\n") {
		t.Errorf("-v left out a passing test's output:\n%s", out.String())
	}
}

func TestABuildFailureFailsTheReport(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out, false)
	in := `{"ImportPath":"ex/c [ex/c.test]","Action":"build-output","Output":"c.go:3:1: syntax error\n"}
{"ImportPath":"ex/c [ex/c.test]","Action":"build-fail"}
{"Action":"output","Package":"ex/c","Output":"FAIL\tex/c [build failed]\n"}
{"Action":"fail","Package":"ex/c","Elapsed":0}
`
	if err := r.read(strings.NewReader(in), ""); err != nil {
		t.Fatal(err)
	}
	if !r.failed || !strings.Contains(out.String(), "c.go:3:1: syntax error\nFAIL\tex/c [build failed]\n") {
		t.Errorf("failed %v, output:\n%s", r.failed, out.String())
	}
}

func TestGoTestCommandsGetJSON(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
		race bool
	}{
		{"go test ./...", []string{"go", "test", "-json", "./..."}, false},
		{"nice -n 10 go test -race -short ./exporter/...", []string{"nice", "-n", "10", "go", "test", "-json", "-race", "-short", "./exporter/..."}, true},
		{"go test -json -count=1 ./x", []string{"go", "test", "-json", "-count=1", "./x"}, false},
	} {
		args, race, err := goTestArgs(tt.line)
		if err != nil || !slices.Equal(args, tt.want) || race != tt.race {
			t.Errorf("%q: %q, race %v, %v; want %q, race %v", tt.line, args, race, err, tt.want, tt.race)
		}
	}
	for _, bad := range []string{"", "go vet ./...", "test ./..."} {
		if _, _, err := goTestArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Two go test commands side by side, one of them failing: the failure is
// printed as go test prints it, both packages are in the tables, and the
// report fails.
func TestCommandsRunSideBySide(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":           "module ex\n\ngo 1.22\n",
		"a/a_test.go":      "package a\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSleeps(t *testing.T) { time.Sleep(300 * time.Millisecond) }\n",
		"b/b_test.go":      "package b\n\nimport \"testing\"\n\nfunc TestFails(t *testing.T) { t.Log(\"said before failing\"); t.Fatal(\"broken\") }\n",
		"b/b_pass_test.go": "package b\n\nimport \"testing\"\n\nfunc TestPasses(t *testing.T) { t.Log(\"quiet\") }\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	var out bytes.Buffer
	r := newReport(&out, false)
	errA := r.run("go test -count=1 ./a")
	errB := r.run("go test -count=1 ./b")
	if errA != nil || errB == nil {
		t.Errorf("go test of a: %v, of b: %v; want only b to fail", errA, errB)
	}
	r.summary(&out, 10, time.Second)
	got := out.String()
	for _, want := range []string{"said before failing", "--- FAIL: TestFails", "FAIL\tex/b", "ok  \tex/a", "pass  ex/a TestSleeps", "fail  ex/b TestFails", "FAIL: the tests took 1s in all"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet") {
		t.Errorf("a passing test's log was printed:\n%s", got)
	}
	if !r.failed {
		t.Error("a failing test did not make the report fail")
	}
}
