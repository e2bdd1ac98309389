package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/jetlake/jetlake/config"
)

// effectiveEnv is the environment the golden effective configurations were
// written in: each variable they name is set, set but empty, or not set
// (""), so that every status shows.
var effectiveEnv = map[string]*string{
	"JETLAKE_GOLDEN_KEY_ID":             ptr("id"),
	"JETLAKE_GOLDEN_SECRET":             nil,
	"JETLAKE_GOLDEN_PASSWORD":           ptr(""),
	"JETLAKE_GOLDEN_TOKEN":              ptr("token"),
	"JETLAKE_GOLDEN_CATALOG_TOKEN":      ptr("token"),
	"JETLAKE_GOLDEN_CATALOG_CREDENTIAL": nil,
	"AWS_ACCESS_KEY_ID":                 nil,
	"AWS_SECRET_ACCESS_KEY":             nil,
	"AWS_SESSION_TOKEN":                 nil,
	"MINIO_ROOT_USER":                   ptr("minio"),
	"MINIO_ROOT_PASSWORD":               ptr(""),
	"AWS_SHARED_CREDENTIALS_FILE":       ptr("testdata/effective/no-such-credentials"),
	"AWS_PROFILE":                       ptr("golden"),
}

func ptr(s string) *string { return &s }

// setEffectiveEnv gives the test the environment of effectiveEnv, and
// restores the process's own afterwards.
func setEffectiveEnv(t *testing.T) {
	t.Helper()
	for k, v := range effectiveEnv {
		if v != nil {
			t.Setenv(k, *v)
			continue
		}
		t.Setenv(k, "") // restores the variable afterwards
		os.Unsetenv(k)
	}
}

// plan prints the same effective configuration of each connector in
// testdata/effective as the golden file beside it (go test -update
// rewrites them).
func TestPlanEffectiveConfigMatchesTheGoldenFiles(t *testing.T) {
	setEffectiveEnv(t)
	files, err := filepath.Glob("testdata/effective/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no connectors in testdata/effective: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			got := effectiveConfig(loadEffective(t, file))
			golden := strings.TrimSuffix(file, ".toml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run EffectiveConfig -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("effective configuration of %s differs from %s:\ngot:\n%s\nwant:\n%s", file, golden, got, want)
			}
		})
	}
}

// notPrinted names the keys a connector file may set that plan's
// effective configuration deliberately leaves out, and why. None today:
// secrets are never keys, only the names of their variables and files.
var notPrinted = map[string]string{}

// Every key a connector file may set, in every table, is in plan's
// effective configuration of a connector that sets it, in the same table;
// and the connectors of testdata/effective set every key between them, so
// a key added to config without its line in plan fails here.
func TestPlanEffectiveConfigShowsEveryKeyAFileSets(t *testing.T) {
	setEffectiveEnv(t)
	files, err := filepath.Glob("testdata/effective/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no connectors in testdata/effective: %v", err)
	}
	set := map[string]bool{} // "table.key" set by some file
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]any
		if _, err := toml.Decode(string(src), &top); err != nil {
			t.Fatal(err)
		}
		printed := effectiveKeys(effectiveConfig(loadEffective(t, file)))
		for _, k := range fileKeys("", top) {
			set[k] = true
			if _, ok := notPrinted[k]; !ok && !printed[k] {
				t.Errorf("%s sets %s, which its effective configuration does not show", file, k)
			}
		}
	}
	for _, table := range []string{"", "nats", "streams", "s3", "output", "output.columns", "state", "iceberg", "rotation"} {
		keys := config.Keys(table)
		if len(keys) == 0 {
			t.Errorf("config.Keys(%q) is empty", table)
		}
		for _, k := range keys {
			if k := joinKey(table, k); !set[k] {
				t.Errorf("no connector in testdata/effective sets %s; add it to one", k)
			}
		}
	}
}

// loadEffective parses the connector in file.
func loadEffective(t *testing.T, file string) *config.Connector {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fileKeys lists the keys set in the decoded table t, at table, as
// "table.key": a table or an array of tables is a key of its parent, and
// its own keys are listed under its name.
func fileKeys(table string, t map[string]any) []string {
	var out []string
	for k, v := range t {
		out = append(out, joinKey(table, k))
		switch v := v.(type) {
		case map[string]any:
			out = append(out, fileKeys(joinKey(table, k), v)...)
		case []map[string]any:
			for _, e := range v {
				out = append(out, fileKeys(joinKey(table, k), e)...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// effectiveKeys lists the keys an effective configuration shows, as
// "table.key": a "key = value" line is a key of the table of the header
// above it, and a header is a key of its parent.
func effectiveKeys(effective string) map[string]bool {
	keys := map[string]bool{}
	table := ""
	for _, l := range strings.Split(effective, "\n") {
		if strings.HasPrefix(l, "[") {
			table = strings.Trim(l, "[]")
			parent, name := "", table
			if i := strings.LastIndexByte(table, '.'); i >= 0 {
				parent, name = table[:i], table[i+1:]
			}
			keys[joinKey(parent, name)] = true
			continue
		}
		if k, _, ok := strings.Cut(l, " = "); ok && !strings.HasPrefix(l, "#") {
			keys[joinKey(table, k)] = true
		}
	}
	return keys
}

// joinKey names key in table: "nats.url", or "name" at the top level.
func joinKey(table, key string) string {
	if table == "" {
		return key
	}
	return table + "." + key
}
