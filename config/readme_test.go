package config

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Every complete connector in the README and the docs pages (a toml block
// that starts with name =) loads, so the documentation never shows a file
// jetlake refuses.
func TestREADMEConnectorsLoad(t *testing.T) {
	pages := docPages(t)
	paths := make([]string, 0, len(pages))
	for path := range pages {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	n := 0
	perPage := make(map[string]int)
	for _, page := range paths {
		blocks := strings.Split(pages[page], "```toml\n")[1:]
		for i, b := range blocks {
			body, _, ok := strings.Cut(b, "```")
			if !ok {
				t.Fatalf("%s: toml block %d is not closed", page, i+1)
			}
			if !strings.HasPrefix(body, "name = ") {
				continue
			}
			n++
			perPage[page]++
			path := filepath.Join(t.TempDir(), "connector.toml")
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(path); err != nil {
				t.Errorf("%s: connector %d does not load:\n%s\n%v", page, perPage[page], body, err)
			}
		}
	}
	// The README's quick starts: one connector that writes files, one that
	// writes an Iceberg table.
	if got := perPage[filepath.Clean("../README.md")]; got < 2 {
		t.Errorf("found %d complete connectors in the README, want at least 2 (its quick starts)", got)
	}
	if n < 2 {
		t.Fatalf("found %d complete connectors in the README and docs pages, want at least 2", n)
	}
}
