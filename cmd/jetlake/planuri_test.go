package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jetlake/jetlake/config"
)

// plan shows a catalog URI as config.RedactURL does: without its user
// information, and without its query, which may hold a secret the
// configuration was not checked for (a REST catalog's token) or a setting
// of the driver.
func TestPlanShowsTheCatalogURIRedacted(t *testing.T) {
	for _, uri := range []string{
		"postgres://jetlake@db1,db2:5432/lake?sslmode=verify-full&options=Hunter2",
		"https://catalog.example.com/api?token=Hunter2",
	} {
		c := &config.Connector{Name: "events", Iceberg: &config.Iceberg{Catalog: "sql", URI: uri, Namespace: "jetlake", Table: "events"}}
		out := effectiveConfig(c)
		if strings.Contains(out, "Hunter2") || !strings.Contains(out, tomlString(config.RedactURL(uri))) {
			t.Errorf("plan of %s shows:\n%s\nwant uri = %s", uri, out, tomlString(config.RedactURL(uri)))
		}
	}
}

// plan's effective configuration fills in every default, the settings of
// partitions, checksums and the orphan sweep included.
func TestPlanEffectiveConfigShowsEverySetting(t *testing.T) {
	c, err := config.Parse("ice.toml", []byte(`name = "ice"
[nats]
url = "nats://127.0.0.1:4222"
[[streams]]
stream = "EV"
partitions = 3
[s3]
bucket = "lake"
[output]
format = "parquet"
[iceberg]
uri = "postgres://jetlake@127.0.0.1/lake"
namespace = "analytics"
table = "events"
`))
	if err != nil {
		t.Fatal(err)
	}
	out := effectiveConfig(c)
	for _, want := range []string{
		"partitions = 3\n", "lease_ttl = \"30s\"\n", "checksum = \"crc32c\"\n",
		"allow_insecure_sslmode = false\n", "remove_orphans = false\n", "orphan_age = \"72h\"\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the effective configuration lacks %q:\n%s", want, out)
		}
	}
}

// tomlString quotes s as a TOML basic string, as plan writes the
// string values of a connector.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
