package main

import (
	"os/exec"
	"strings"
	"testing"
)

// module is the path of jetlake's module.
const module = "github.com/jetlake/jetlake"

// goList runs go list with args and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The pure top-level packages are leaves: they import nothing under
// exporter/ or internal/, directly or through another package, so that
// what depends on them points one way only.
func TestPurePackagesImportNothingUnderExporterOrInternal(t *testing.T) {
	pure := []string{module + "/buffer", module + "/formats", module + "/pathtemplate", module + "/lossmarker"}
	for _, p := range goList(t, append([]string{"-deps"}, pure...)...) {
		if strings.HasPrefix(p, module+"/exporter/") || strings.HasPrefix(p, module+"/internal/") {
			t.Errorf("a pure top-level package depends on %s (go list -deps %s)", p, strings.Join(pure, " "))
		}
	}
}

// Of the packages the binary links, only internal/objstore reads
// minio-go: the others see the store's errors as the kinds of
// internal/failure and objstore's own errors.
func TestOnlyTheObjectStoreImportsMinIOGo(t *testing.T) {
	for _, line := range goList(t, "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", ".") {
		pkg, imports, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(pkg, module+"/") || pkg == module+"/internal/objstore" {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, "github.com/minio/minio-go/") {
				t.Errorf("%s imports %s: only internal/objstore may", pkg, imp)
			}
		}
	}
}
