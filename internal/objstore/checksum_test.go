package objstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/objstore"
)

// The store checks every upload against its checksum: a body whose
// CRC32C does not match is refused and nothing is stored, so a body
// damaged on its way is never acked as written.
func TestTheStoreRefusesABodyThatDoesNotMatchItsChecksum(t *testing.T) {
	exportertest.SkipShort(t)
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ms.CreateBucket(ctx, "checksum"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JETLAKE_TEST_ACCESS_KEY", ms.AccessKey)
	t.Setenv("JETLAKE_TEST_SECRET_KEY", ms.SecretKey)
	st, err := objstore.NewS3Store(config.S3{
		Bucket: "checksum", Endpoint: ms.Endpoint, Region: exportertest.MinIORegion, PathStyle: true,
		AccessKeyIDEnv: "JETLAKE_TEST_ACCESS_KEY", SecretAccessKeyEnv: "JETLAKE_TEST_SECRET_KEY",
	})
	if err != nil {
		t.Fatal(err)
	}
	damaged := st.WithWrongChecksum()
	body := formats.NewBody([]byte("{\"a\":1}\n"))
	err = damaged.Put(ctx, "raw/bad.jsonl", body, objstore.PutOptions{IfNoneMatch: true})
	if err == nil {
		t.Fatal("Put with a wrong CRC32C succeeded")
	}
	t.Logf("refused: %v", err)
	if _, err := st.Get(ctx, "raw/bad.jsonl"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Get after the refused Put: %v, want not found", err)
	}
	if err := st.Put(ctx, "raw/bad.jsonl", body, objstore.PutOptions{IfNoneMatch: true}); err != nil {
		t.Fatalf("Put with the right CRC32C: %v", err)
	}
}
