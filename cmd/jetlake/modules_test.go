package main

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// linkedModulesFile is the reviewed list of the modules the binary links.
const linkedModulesFile = "testdata/linked-modules.txt"

// Every module linked into the binary is one someone reviewed: a new one
// (an upgrade of iceberg-go that pulls in another SDK, a dependency added in
// passing) fails here until its line is added, and a module no longer linked
// fails until its line goes, so the list stays the truth of what ships.
func TestLinkedModulesAreReviewed(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}{{end}}{{end}}", ".").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	linked := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		linked[m] = true
	}
	reviewed := readReviewedModules(t)
	var added, gone []string
	for m := range linked {
		if !reviewed[m] {
			added = append(added, m)
		}
	}
	for m := range reviewed {
		if !linked[m] {
			gone = append(gone, m)
		}
	}
	slices.Sort(added)
	slices.Sort(gone)
	for _, m := range added {
		t.Errorf("the binary links %s, which %s does not list: review it, then add a line with what brings it (go mod why -m %s)", m, linkedModulesFile, m)
	}
	for _, m := range gone {
		t.Errorf("%s lists %s, which the binary no longer links: remove its line", linkedModulesFile, m)
	}
}

// readReviewedModules reads the module paths of linkedModulesFile: the first
// field of each line that is not blank or a comment.
func readReviewedModules(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(linkedModulesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mods := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		path, why, _ := strings.Cut(line, "\t")
		if why == "" {
			t.Errorf("%s: %s says nothing of what brings it", linkedModulesFile, path)
		}
		mods[path] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return mods
}
