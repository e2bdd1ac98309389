package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jetlake/jetlake/internal/fault"
)

// faultTag is the build tag that compiles fault injection into jetlake
// (internal/fault/fault.go). Only the binary of the crash tests has it.
const faultTag = "jetlakefault"

// A binary built as `make build` builds it must not even hold the name of
// the variable that would make it kill itself; the one the crash tests
// build must, or the search would prove nothing.
func TestReleaseBuildHasNoFaultInjection(t *testing.T) {
	t.Parallel()
	release := filepath.Join(t.TempDir(), "jetlake")
	if out, err := exec.Command("go", "build", "-o", release, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tt := range []struct {
		path string
		want bool
	}{{binary, true}, {release, false}} {
		b, err := os.ReadFile(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(b, []byte(fault.Env)); got != tt.want {
			t.Errorf("%s holds %q: %v, want %v", tt.path, fault.Env, got, tt.want)
		}
	}
}
