package main

import (
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
