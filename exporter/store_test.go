package exporter_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/objstore"
)

// contractStore is what every object store of jetlake offers: the writes
// of the exporter, the reads of verify and the delete of plan -cleanup.
type contractStore interface {
	objstore.ObjectStore
	objstore.ObjectReader
	Delete(ctx context.Context, key string) error
}

// Every object store meets one contract, so that what the exporter tests
// learn from the in-memory store holds for S3 as well.
func TestEveryObjectStoreKeepsTheStoreContract(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		store func(t *testing.T) contractStore
	}{
		{"memory", func(*testing.T) contractStore { return &exporter.MemStore{} }},
		{"S3 on MinIO", s3OnMinIO},
		{"S3 on MinIO with Content-MD5", func(t *testing.T) contractStore { return s3OnMinIOWith(t, config.ChecksumMD5) }},
	} {
		t.Run(tt.name, func(t *testing.T) { storeContract(t, tt.store(t)) })
	}
}

// s3OnMinIO is an S3Store on a new bucket of the package's MinIO.
func s3OnMinIO(t *testing.T) contractStore { return s3OnMinIOWith(t, "") }

// s3OnMinIOWith is an S3Store with the given checksum setting on a new
// bucket of the package's MinIO.
func s3OnMinIOWith(t *testing.T, checksum string) *objstore.S3Store {
	ms := shared.MinIO(t)
	bucket := fmt.Sprintf("contract-%d-%d", os.Getpid(), seq.Add(1))
	if err := ms.CreateBucket(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	wantTestCredentials(t, ms)
	st, err := objstore.NewS3Store(config.S3{
		Bucket: bucket, Endpoint: ms.Endpoint, Region: exportertest.MinIORegion, PathStyle: true,
		AccessKeyIDEnv: "JETLAKE_TEST_ACCESS_KEY", SecretAccessKeyEnv: "JETLAKE_TEST_SECRET_KEY",
		Checksum: checksum,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func storeContract(t *testing.T, st contractStore) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body := func(s string) formats.Body { return formats.NewBody([]byte(s)) }
	put := func(key, data string, md map[string]string, ifNoneMatch bool) error {
		return st.Put(ctx, key, body(data), objstore.PutOptions{ContentType: "application/jsonl", Metadata: md, IfNoneMatch: ifNoneMatch})
	}
	wantBody := func(key, want string) {
		t.Helper()
		if got, err := st.Get(ctx, key); err != nil || string(got) != want {
			t.Fatalf("Get(%s) = %q, %v; want %q", key, got, err, want)
		}
	}
	// Metadata names come back in canonical form, whatever their case.
	md := map[string]string{objstore.MetaIntent: "I1", "jetlake-count": "3"}
	wantMD := map[string]string{objstore.MetaIntent: "I1", "Jetlake-Count": "3"}

	const a, b, other = "raw/a/1.jsonl", "raw/a/2.jsonl", "raw/b/3.jsonl"
	if err := put(a, "one\n", md, true); err != nil {
		t.Fatalf("first conditional Put: %v", err)
	}
	if err := put(a, "two\n", map[string]string{objstore.MetaIntent: "I2"}, true); !errors.Is(err, objstore.ErrExists) {
		t.Fatalf("second conditional Put: %v, want ErrExists", err)
	}
	wantBody(a, "one\n")
	if got, err := st.Head(ctx, a); err != nil || !maps.Equal(got, wantMD) {
		t.Fatalf("Head(%s) = %v, %v; want %v", a, got, err, wantMD)
	}
	if _, err := st.Head(ctx, "raw/a/missing"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Head of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := st.Get(ctx, "raw/a/missing"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}

	// Without If-None-Match a Put replaces the object.
	for _, data := range []string{"first\n", "second\n"} {
		if err := put(b, data, nil, false); err != nil {
			t.Fatalf("unconditional Put: %v", err)
		}
	}
	wantBody(b, "second\n")
	if err := put(other, "x\n", nil, true); err != nil {
		t.Fatal(err)
	}

	// List returns the keys under the prefix in order, with the metadata
	// where the store lists it (nil where it does not).
	list := func(prefix string) []string {
		t.Helper()
		var keys []string
		err := st.List(ctx, prefix, func(key string, got map[string]string) error {
			keys = append(keys, key)
			for k, v := range wantMD {
				if key == a && got != nil && got[k] != v {
					t.Errorf("List: %s has metadata %v, want %v among it", key, got, wantMD)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("List(%s): %v", prefix, err)
		}
		return keys
	}
	if got := list("raw/a/"); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("List(raw/a/) = %q, want %q", got, []string{a, b})
	}

	if err := st.Delete(ctx, a); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := st.Head(ctx, a); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Head after Delete: %v, want ErrNotFound", err)
	}
	if err := st.Delete(ctx, a); err != nil {
		t.Fatalf("Delete of a missing key: %v, want no error", err)
	}
	if got := list("raw/"); !slices.Equal(got, []string{b, other}) {
		t.Fatalf("List(raw/) after Delete = %q, want %q", got, []string{b, other})
	}
	// A key that was deleted may be written again, conditionally.
	if err := put(a, "three\n", md, true); err != nil {
		t.Fatalf("conditional Put after Delete: %v", err)
	}
	wantBody(a, "three\n")

	// A key the store refuses is a *KeyError, which the exporter does not
	// retry: longer than 1024 bytes, not UTF-8, a segment longer than the
	// 255 bytes MinIO takes.
	for _, key := range []string{
		"raw/" + strings.Repeat("k", 1100),
		"raw/\xff/x.jsonl",
		"raw/" + strings.Repeat("k", 256) + "/x.jsonl",
	} {
		var ke *objstore.KeyError
		if err := put(key, "x\n", nil, true); !errors.As(err, &ke) || ke.Key != key {
			t.Errorf("Put(%.40q...) = %v, want a KeyError naming the key", key, err)
		}
	}
	if err := put("raw/"+strings.Repeat("k", 255)+"/x.jsonl", "x\n", nil, true); err != nil {
		t.Errorf("Put with a segment of 255 bytes: %v", err)
	}
}
