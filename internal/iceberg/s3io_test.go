package iceberg

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// removals is a file IO that records what it was asked to remove.
type removals struct {
	blobIO  // nil: the fence calls nothing else
	removed []string
}

func (r *removals) Remove(name string) error {
	r.removed = append(r.removed, name)
	return nil
}

func (r *removals) DeleteFiles(_ context.Context, paths []string) ([]string, error) {
	r.removed = append(r.removed, paths...)
	return paths, nil
}

// The file IO of a table removes only files inside the table's location,
// whatever the table's metadata names: expiry removes the files expired
// manifests name, and a forged or foreign manifest may name any object.
func TestTheFileIOOfATableRemovesOnlyFilesInsideItsLocation(t *testing.T) {
	const table = "s3://lake/raw/lake/orders"
	for _, tc := range []struct {
		name, location, path string
		ok                   bool
	}{
		{"a data file", table, table + "/data/timestamp_hour=2026-12-01-07/subject=s.a/00000000000000000001-00000000000000000010.parquet", true},
		{"a manifest list", table, table + "/metadata/snap-1-0-x.avro", true},
		{"an old metadata file", table, table + "/metadata/00001-x.metadata.json", true},
		{"a table location ending in a slash", table + "/", table + "/metadata/x-m0.avro", true},
		{"dots inside a name", table, table + "/data/subject=a..b/1-2.parquet", true},
		{"outside the prefix", table, "s3://lake/hr/salaries.parquet", false},
		{"a table whose name starts the same", table, "s3://lake/raw/lake/orders2/data/1-2.parquet", false},
		{"a table whose name continues with a dash", table, "s3://lake/raw/lake/orders-other/metadata/00001-x.metadata.json", false},
		{"the folder above", table, "s3://lake/raw/lake/x.parquet", false},
		{"another bucket", table, "s3://other/raw/lake/orders/data/1-2.parquet", false},
		{"a bucket sharing the name's start", table, "s3://lake2/raw/lake/orders/data/1-2.parquet", false},
		{"another scheme for the same bucket", table, "s3a://lake/raw/lake/orders/data/1-2.parquet", false},
		{"a local file", table, "file:///etc/passwd", false},
		{"a bare key", table, "raw/lake/orders/data/1-2.parquet", false},
		{"a .. segment", table, table + "/data/../../../../hr/salaries.parquet", false},
		{"a .. segment that comes back", table, table + "/data/x/../1-2.parquet", false},
		{"a . segment", table, table + "/./data/1-2.parquet", false},
		{"an empty segment", table, table + "//data/1-2.parquet", false},
		{"the location itself", table, table, false},
		{"the location's folder", table, table + "/", false},
		{"no path", table, "", false},
		{"a file IO that knows no table location", "", table + "/data/1-2.parquet", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, op := range []string{"Remove", "DeleteFiles"} {
				inner := &removals{}
				f := &fencedIO{blobIO: inner, location: strings.TrimSuffix(tc.location, "/")}
				var err error
				if op == "Remove" {
					err = f.Remove(tc.path)
				} else {
					var deleted []string
					deleted, err = f.DeleteFiles(context.Background(), []string{tc.path})
					if tc.ok != (len(deleted) == 1) {
						t.Fatalf("%s %s: deleted %q", op, tc.path, deleted)
					}
				}
				var oe *OutsideTableError
				switch {
				case tc.ok && (err != nil || !slices.Equal(inner.removed, []string{tc.path})):
					t.Fatalf("%s %s: removed %q, %v", op, tc.path, inner.removed, err)
				case tc.ok:
				case len(inner.removed) > 0:
					t.Fatalf("%s %s: removed %q", op, tc.path, inner.removed)
				case !errors.As(err, &oe):
					t.Fatalf("%s %s: %v, want an *OutsideTableError", op, tc.path, err)
				case oe.Path != tc.path || oe.Location != strings.TrimSuffix(tc.location, "/"):
					t.Fatalf("%s %s: error %+v does not name the file and the table's location", op, tc.path, oe)
				case !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.location):
					t.Fatalf("%s %s: the message %q does not name the file and the table's location", op, tc.path, err)
				}
			}
		})
	}
}

// A bulk removal removes the files inside the table's location and refuses
// each of the others by name.
func TestABulkRemovalRemovesTheFilesInsideAndRefusesEachOther(t *testing.T) {
	const table = "s3://lake/raw/lake/orders"
	inner := &removals{}
	f := &fencedIO{blobIO: inner, location: table}
	inside := []string{table + "/metadata/snap-1-0-x.avro", table + "/data/1-2.parquet"}
	outside := []string{"s3://lake/hr/salaries.parquet", "s3://lake/raw/lake/orders2/data/1-2.parquet"}
	deleted, err := f.DeleteFiles(context.Background(), []string{outside[0], inside[0], outside[1], inside[1]})
	if !slices.Equal(deleted, inside) || !slices.Equal(inner.removed, inside) {
		t.Fatalf("deleted %q, removed %q, want %q", deleted, inner.removed, inside)
	}
	for _, p := range outside {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Fatalf("the error %v does not name %s", err, p)
		}
	}
	// The error of an expiry counts the refused files and names the first,
	// on one line.
	msg := removalErrors(err).Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, outside[0]) || !strings.Contains(msg, table+"/") || !strings.Contains(msg, "1 more") {
		t.Fatalf("the expiry's error %q", msg)
	}
	if oe := (*OutsideTableError)(nil); !errors.As(removalErrors(err), &oe) || oe.Path != outside[0] {
		t.Fatalf("the expiry's error does not unwrap to the first refusal: %v", oe)
	}
}
