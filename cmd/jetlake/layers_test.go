package main

import (
	"os"
	"os/exec"
	"slices"
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

// apiPackages returns the packages README.md's "Go packages" section
// lists: the code span that starts each of its bullets.
func apiPackages(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Go packages\n")
	if !ok {
		t.Fatal(`README.md has no "## Go packages" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var api []string
	for line := range strings.SplitSeq(section, "\n") {
		if rest, ok := strings.CutPrefix(line, "- `"); ok {
			if p, _, ok := strings.Cut(rest, "`"); ok {
				api = append(api, p)
			}
		}
	}
	if len(api) == 0 {
		t.Fatal(`README.md's "Go packages" section lists no package`)
	}
	return api
}

// The packages README.md lists as the Go API are exactly the module's
// packages outside cmd/ and internal/: a new package is either documented
// there or internal, and nothing internal is offered as API.
func TestTheREADMEListsEveryPackageOutsideInternal(t *testing.T) {
	api := apiPackages(t)
	for _, p := range api {
		if !strings.HasPrefix(p, module+"/") && p != module {
			t.Errorf("README.md lists %s as a Go package, which is not of module %s", p, module)
		}
		if strings.Contains(p+"/", "/internal/") || strings.HasPrefix(p, module+"/cmd/") {
			t.Errorf("README.md lists %s as a Go package: it is not API", p)
		}
	}
	public := map[string]bool{}
	for _, p := range goList(t, module+"/...") {
		if !strings.HasPrefix(p, module+"/internal/") && !strings.HasPrefix(p, module+"/cmd/") {
			public[p] = true
		}
	}
	for p := range public {
		if !slices.Contains(api, p) {
			t.Errorf("package %s is outside internal/ but README.md's Go packages do not list it: list it, or move it under internal/", p)
		}
	}
	for _, p := range api {
		if !public[p] {
			t.Errorf("README.md lists %s as a Go package, which is not there", p)
		}
	}
}

// cmd/jetlake is built from the API the README documents: every package of
// this module it imports, in every build (the crash tests' binary has
// -tags jetlakefault), is one README.md lists. What the command needs of
// an internal package an API package gives it, in words of what the
// command does.
func TestTheCommandImportsOnlyTheDocumentedAPI(t *testing.T) {
	api := apiPackages(t)
	for _, tags := range []string{"", "jetlakefault"} {
		for _, imp := range goList(t, "-tags", tags, "-f", `{{join .Imports "\n"}}`, ".") {
			if (imp == module || strings.HasPrefix(imp, module+"/")) && !slices.Contains(api, imp) {
				t.Errorf("cmd/jetlake imports %s (tags %q), which README.md's Go packages do not list", imp, tags)
			}
		}
	}
}
