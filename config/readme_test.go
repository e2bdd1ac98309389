package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every complete connector in the README (a toml block that starts with
// name =) loads, so the documentation never shows a file jetlake refuses.
func TestREADMEConnectorsLoad(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(readme), "```toml\n")[1:]
	n := 0
	for i, b := range blocks {
		body, _, ok := strings.Cut(b, "```")
		if !ok {
			t.Fatalf("toml block %d is not closed", i+1)
		}
		if !strings.HasPrefix(body, "name = ") {
			continue
		}
		n++
		path := filepath.Join(t.TempDir(), "readme.toml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err != nil {
			t.Errorf("README connector %d does not load:\n%s\n%v", n, body, err)
		}
	}
	if n < 2 {
		t.Fatalf("found %d complete connectors in the README, want at least 2", n)
	}
}
