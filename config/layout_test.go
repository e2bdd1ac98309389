package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The contributors' map in docs/architecture.md is the tree's: every
// package with Go code has a row in its package table (a row may name
// several, as `cmd/jetlake-demo`, `cmd/jetlake-bench` does), every non-test
// file of the exporter package has a row in its file table, and neither
// table names a package or file that is gone.
func TestTheArchitecturePageMapsTheTree(t *testing.T) {
	page, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	packages, files := mapRows(string(page))

	var have []string
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != ".." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dir := filepath.ToSlash(strings.TrimPrefix(filepath.Dir(path), "../"))
			if !slices.Contains(have, dir) {
				have = append(have, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range have {
		if !slices.Contains(packages, p) {
			t.Errorf("package %s has no row in the package table of docs/architecture.md", p)
		}
	}
	for _, p := range packages {
		if p != "examples" && !slices.Contains(have, p) {
			t.Errorf("docs/architecture.md maps package %s, which holds no Go code", p)
		}
	}

	exporterFiles, err := filepath.Glob("../exporter/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var goFiles []string
	for _, f := range exporterFiles {
		if name := filepath.Base(f); !strings.HasSuffix(name, "_test.go") {
			goFiles = append(goFiles, name)
			if !slices.Contains(files, name) {
				t.Errorf("exporter/%s has no row in the exporter file table of docs/architecture.md", name)
			}
		}
	}
	for _, f := range files {
		if !slices.Contains(goFiles, f) {
			t.Errorf("docs/architecture.md maps exporter/%s, which is not there", f)
		}
	}
}

// mapRows returns the names in the first cell of the rows of the package
// table and of the exporter file table.
func mapRows(page string) (packages, files []string) {
	code := regexp.MustCompile("`([^`]+)`")
	var table *[]string
	for line := range strings.SplitSeq(page, "\n") {
		switch {
		case strings.HasPrefix(line, "| Package |"):
			table = &packages
			continue
		case strings.HasPrefix(line, "| `exporter` file |"):
			table = &files
			continue
		case !strings.HasPrefix(line, "|"):
			table = nil
			continue
		}
		if table == nil || strings.HasPrefix(line, "| ---") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range code.FindAllStringSubmatch(first, -1) {
			*table = append(*table, m[1])
		}
	}
	return packages, files
}
