// The race detector sees nothing of DuckDB's C++, and make test runs its
// race pass with -short, where this test skips: under -race the package
// has no test, so that DuckDB is not linked into a second test binary for
// nothing.

//go:build !race

package querytest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/pathtemplate"
)

var shared exportertest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// connectorTOML partitions by the day of created_at and by tenant, as
// docs/configuration.md's "Event time and partitions by content" shows.
// %s: NATS URL, stream, bucket, S3 endpoint.
const connectorTOML = `
name = "query"
shutdown_timeout = "30s"

[nats]
url = %q

[[streams]]
stream = %q
subjects = ["%[2]s.>"]

[s3]
bucket = %q
endpoint = %q
prefix = "lake"
access_key_id_env = "JETLAKE_TEST_ACCESS_KEY"
secret_access_key_env = "JETLAKE_TEST_SECRET_KEY"

[output]
format = "json_lines"
path_template = "{stream}/dt={date}/tenant={column:tenant}"
group_by = "path"
time_source = "column:created_at"
time_fallback = "reject"

[[output.columns]]
name = "created_at"
source = "created_at"
type = "timestamp"

[[output.columns]]
name = "tenant"
source = "tenant"
type = "string"

[rotation]
max_file_size = "64KiB"
max_file_age = "20s"
`

// days and tenants of the published events; the counts per day differ,
// so that a count in the wrong day shows. Every seventh event has no
// tenant: its directory is tenant=__HIVE_DEFAULT_PARTITION__, which a
// query engine reads as null.
var (
	days    = map[string]int{"2026-11-01": 700, "2026-11-02": 1100, "2026-11-03": 1500}
	tenants = []string{"acme", "globex", "initech"}
)

// noTenant is the tenant of an event published without one, as the
// counts below name it.
const noTenant = "(null)"

func TestDuckDBReadsTheHivePartitionsJetlakeWrote(t *testing.T) {
	ns, ms := shared.NATS(t), shared.MinIO(t)
	ctx := context.Background()
	stream, bucket := "QUERY", fmt.Sprintf("query-%d", os.Getpid())

	nc, err := nats.Connect(ns.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"}}); err != nil {
		t.Fatal(err)
	}
	if err := ms.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}

	// The days interleave, as a backfill's events do; counts by day and
	// by day and tenant, as published.
	byDay := map[string]int{}
	byTenant := map[string]int{}
	var order []string
	for day, n := range days {
		for range n {
			order = append(order, day)
		}
	}
	slices.Sort(order)
	for i := range order {
		j := (i * 7919) % len(order) // a fixed shuffle: 7919 is prime to the total
		order[i], order[j] = order[j], order[i]
	}
	for i, day := range order {
		tenant, field := noTenant, ""
		if i%7 != 0 {
			tenant = tenants[i%len(tenants)]
			field = fmt.Sprintf(`,"tenant":%q`, tenant)
		}
		data := fmt.Sprintf(`{"i":%d%s,"created_at":"%sT%02d:%02d:%02dZ","amount":%d}`, i, field, day, i%24, i%60, i%59, i%1000)
		if _, err := js.PublishAsync(fmt.Sprintf("%s.s%d", stream, i%5), []byte(data)); err != nil {
			t.Fatal(err)
		}
		byDay[day]++
		byTenant[day+"/"+tenant]++
		if i%1000 == 999 {
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("publish acks timed out")
	}

	// jetlake exports the stream until idle.
	t.Setenv("JETLAKE_TEST_ACCESS_KEY", ms.AccessKey)
	t.Setenv("JETLAKE_TEST_SECRET_KEY", ms.SecretKey)
	file := filepath.Join(t.TempDir(), "connector.toml")
	if err := os.WriteFile(file, fmt.Appendf(nil, connectorTOML, ns.URL, stream, bucket, ms.Endpoint), 0o644); err != nil {
		t.Fatal(err)
	}
	conns, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := exporter.New(conns[0], exporter.Options{Logger: slog.New(slog.DiscardHandler), UntilIdle: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := ex.Run(rctx); err != nil {
		t.Fatal(err)
	}

	// The objects, under their keys, where DuckDB can read them.
	dir := t.TempDir()
	objects := download(ctx, t, ms, bucket, "lake/", dir)
	if objects < len(days)*(len(tenants)+1) {
		t.Fatalf("%d data objects, want at least one per day and tenant", objects)
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	from := fmt.Sprintf("read_json_auto('%s/**/*.jsonl', hive_partitioning = true)", filepath.ToSlash(dir))

	gotDay := query(t, db, "SELECT CAST(dt AS VARCHAR), count(*) FROM "+from+" GROUP BY ALL")
	if !maps.Equal(gotDay, byDay) {
		t.Errorf("records by day, as DuckDB reads them:\n%v\nwant, as published:\n%v", gotDay, byDay)
	}
	gotTenant := query(t, db, "SELECT CAST(dt AS VARCHAR) || '/' || coalesce(tenant, '"+noTenant+"'), count(*) FROM "+from+" GROUP BY ALL")
	if !maps.Equal(gotTenant, byTenant) {
		t.Errorf("records by day and tenant, as DuckDB reads them:\n%v\nwant, as published:\n%v", gotTenant, byTenant)
	}
	// The partition columns come from the paths and agree with the
	// payloads they were rendered from: a date, the tenant, and null for
	// the default partition.
	var types string
	if err := db.QueryRow("SELECT typeof(any_value(dt)) || ' ' || typeof(any_value(tenant)) FROM " + from).Scan(&types); err != nil {
		t.Fatal(err)
	}
	if types != "DATE VARCHAR" {
		t.Errorf("DuckDB reads dt and tenant as %s, want DATE VARCHAR", types)
	}
	var mismatched int
	if err := db.QueryRow("SELECT count(*) FROM " + from + ` WHERE dt IS DISTINCT FROM CAST(payload.created_at AS DATE)
		OR tenant IS DISTINCT FROM payload.tenant`).Scan(&mismatched); err != nil {
		t.Fatal(err)
	}
	if mismatched > 0 {
		t.Errorf("%d records whose dt or tenant from the path differs from the payload", mismatched)
	}
}

// download writes every data object under prefix into dir under its key,
// and returns how many there are; jetlake's own objects (_jetlake/) stay
// out.
func download(ctx context.Context, t *testing.T, ms *exportertest.MinIOServer, bucket, prefix, dir string) int {
	t.Helper()
	mc, err := ms.Client()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for obj := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		if strings.HasPrefix(obj.Key, pathtemplate.OwnPrefix(strings.TrimSuffix(prefix, "/"))) {
			continue
		}
		body, err := mc.GetObject(ctx, bucket, obj.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(body)
		body.Close()
		if err != nil {
			t.Fatalf("get %s: %v", obj.Key, err)
		}
		file := filepath.Join(dir, filepath.FromSlash(obj.Key))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// query runs a query of two columns, a key and a count, and returns the
// counts by key.
func query(t *testing.T, db *sql.DB, q string) map[string]int {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var key string
		var n int
		if err := rows.Scan(&key, &n); err != nil {
			t.Fatal(err)
		}
		out[key] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
