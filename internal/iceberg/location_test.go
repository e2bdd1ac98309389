package iceberg

import (
	"errors"
	"testing"
)

// A commit may name only files under its table's data folder: a plan read
// back from the state bucket is input.
func TestOnlyFilesUnderTheTablesDataFolderMayBeCommitted(t *testing.T) {
	const table = "s3://lake/raw/lake/orders"
	for _, tc := range []struct {
		name, table, loc string
		ok               bool
	}{
		{"a data file of the table", table, table + "/data/timestamp_hour=2026-12-01-07/subject=s.a/00000000000000000001-00000000000000000010.parquet", true},
		{"a table location ending in a slash", table + "/", table + "/data/subject=s.a/1-2.parquet", true},
		{"an unpartitioned data file", table, table + "/data/00000000000000000001-00000000000000000010.parquet", true},
		{"an escaped partition value, opaque to S3", table, table + "/data/subject=a%2F..%2Fb/1-2.parquet", true},
		{"dots inside a name", table, table + "/data/subject=a..b/1-2.parquet", true},
		{"outside the prefix", table, "s3://lake/hr/salaries.parquet", false},
		{"another bucket", table, "s3://other/raw/lake/orders/data/1-2.parquet", false},
		{"a bucket sharing the name's start", table, "s3://lake2/raw/lake/orders/data/1-2.parquet", false},
		{"another scheme", table, "s3a://lake/raw/lake/orders/data/1-2.parquet", false},
		{"the data folder of a table sharing the name's start", table, "s3://lake/raw/lake/orders2/data/1-2.parquet", false},
		{"a table's folder outside data", table, table + "/metadata/00001-x.metadata.json", false},
		{"a file beside the data folder", table, table + "/data.parquet", false},
		{"the data folder itself", table, table + "/data/", false},
		{"a .. segment", table, table + "/data/../../../../hr/salaries.parquet", false},
		{"a .. segment that comes back", table, table + "/data/x/../1-2.parquet", false},
		{"a . segment", table, table + "/data/./1-2.parquet", false},
		{"an empty segment", table, table + "/data//1-2.parquet", false},
		{"a folder, not a file", table, table + "/data/subject=s.a/", false},
		{"no location", table, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkDataFile(tc.table, tc.loc)
			var le *LocationError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("%s refused: %v", tc.loc, err)
			case !tc.ok && !errors.As(err, &le):
				t.Fatalf("%s: %v, want a *LocationError", tc.loc, err)
			case !tc.ok && (le.Location != tc.loc || le.DataDir != table+"/data/"):
				t.Fatalf("%s: error %+v does not name the file and the data folder", tc.loc, le)
			}
		})
	}
}
