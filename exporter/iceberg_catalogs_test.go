package exporter_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
)

// catalogConnector turns the test's connector into one that writes an
// Iceberg table through the catalog that [iceberg] lines (besides
// namespace, table and commit_interval) describe.
func (e *env) catalogConnector(lines string) {
	e.t.Helper()
	body, err := os.ReadFile(e.file)
	if err != nil {
		e.t.Fatal(err)
	}
	s := strings.Replace(string(body), `format = "json_lines"`, `format = "parquet"`, 1)
	s = strings.Replace(s, `path_template = "{stream}/{subject}/{date}/{hour}"`, "", 1)
	s += "\n[iceberg]\n" + lines + "\nnamespace = \"lake\"\ntable = \"events\"\ncommit_interval = \"1h\"\n"
	if err := os.WriteFile(e.file, []byte(s), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// checkTable requires sequences 1..n each in exactly one data file of the
// table, in snapshots snapshots.
func checkTable(t *testing.T, tr *icebergtest.Table, err error, n uint64, snapshots int) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if problems := tr.Check(n); len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	if tr.Snapshots != snapshots {
		t.Fatalf("%d snapshots, want %d", tr.Snapshots, snapshots)
	}
}

// A connector with catalog = "rest" writes its table through an Iceberg
// REST catalog, with the bearer token its token_env names, and retries a
// commit the catalog refuses as a conflict.
func TestAnIcebergConnectorCommitsThroughARESTCatalog(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	ms := shared.MinIO(t)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	backing, err := sqlcat.NewCatalog("backing", db, sqlcat.SQLite, iceberg.Properties{
		"warehouse": "s3://" + e.bucket + "/raw", iceio.S3Region: exportertest.MinIORegion,
		iceio.S3AccessKeyID: ms.AccessKey, iceio.S3SecretAccessKey: ms.SecretKey, iceio.S3EndpointURL: ms.Endpoint,
	})
	if err != nil {
		t.Fatal(err)
	}
	const token = "s3cr3t-token"
	srv := icebergtest.StartREST(t, backing, token)
	t.Setenv("JETLAKE_TEST_ICEBERG_TOKEN", token)
	e.catalogConnector(fmt.Sprintf("catalog = \"rest\"\nuri = %q\ntoken_env = \"JETLAKE_TEST_ICEBERG_TOKEN\"", srv.URL))
	c := e.connector()
	read := func() (*icebergtest.Table, error) {
		return icebergtest.Read(db, false, "backing", "lake", "events", icebergtest.MinIOGet(e.mc, e.bucket))
	}

	e.publish(600, 3)
	e.runUntilIdle(c, 2*time.Minute)
	tr, err := read()
	checkTable(t, tr, err, 600, 1)
	commits := "POST /v1/namespaces/{namespace}/tables/{table}"
	if n := srv.Requests()[commits]; n != 1 {
		t.Fatalf("%d commits through the REST catalog, want 1", n)
	}
	e.wantAllAcked()

	// The catalog refuses the next two commits as conflicts: jetlake
	// retries with a fresh transaction and lands the files once.
	srv.FailCommits(2)
	e.publish(300, 3)
	e.runUntilIdle(c, 2*time.Minute)
	tr, err = read()
	checkTable(t, tr, err, 900, 2)
	if n := srv.Requests()[commits]; n != 4 {
		t.Fatalf("%d commits through the REST catalog, want 4 (two refused)", n)
	}
	e.wantAllAcked()
	e.verify(c)

	// Without its token the connector does not start, and says why.
	t.Setenv("JETLAKE_TEST_ICEBERG_TOKEN", "")
	if err := e.runUntilIdleErr(c, time.Minute); err == nil || !strings.Contains(err.Error(), "JETLAKE_TEST_ICEBERG_TOKEN") {
		t.Fatalf("run without the token: %v", err)
	}
}

// A connector with catalog = "glue" writes its table through the AWS Glue
// Data Catalog (a stand-in speaking Glue's protocol), signed with the AWS
// credentials of the environment; a commit Glue refuses for a concurrent
// change is retried.
func TestAnIcebergConnectorCommitsThroughGlue(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	glue := icebergtest.StartGlue(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDGLUETEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "glue-secret")
	e.catalogConnector(fmt.Sprintf("catalog = \"glue\"\nuri = %q\nregion = \"eu-west-1\"", glue.Endpoint))
	c := e.connector()
	read := func() (*icebergtest.Table, error) {
		loc := glue.MetadataLocation("lake", "events")
		if loc == "" {
			t.Fatal("Glue has no table lake.events")
		}
		return icebergtest.ReadMetadata(loc, icebergtest.MinIOGet(e.mc, e.bucket))
	}

	e.publish(600, 3)
	e.runUntilIdle(c, 2*time.Minute)
	tr, err := read()
	checkTable(t, tr, err, 600, 1)
	e.wantAllAcked()

	glue.FailUpdates(2)
	e.publish(300, 3)
	e.runUntilIdle(c, 2*time.Minute)
	tr, err = read()
	checkTable(t, tr, err, 900, 2)
	e.wantAllAcked()
	e.verify(c)
	if keys := glue.AccessKeys(); !slices.Equal(keys, []string{"AKIDGLUETEST"}) {
		t.Fatalf("Glue saw access keys %v, want the environment's only", keys)
	}
}

// runUntilIdleErr runs the connector until idle and returns its error.
func (e *env) runUntilIdleErr(c *config.Connector, timeout time.Duration) error {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done, _ := e.run(ctx, c, true)
	return <-done
}
