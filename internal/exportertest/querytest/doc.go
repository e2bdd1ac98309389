// Package querytest checks that a query engine reads the lake as users'
// engines do: DuckDB, given the objects jetlake wrote with Hive-style
// directories ("{stream}/dt={date}/tenant={column:tenant}"), reads the
// partition columns from the paths with hive_partitioning and counts each
// day and tenant exactly, the null partition
// (__HIVE_DEFAULT_PARTITION__) included.
//
// The package holds only tests, so that only its test binary links DuckDB,
// a large static C++ library brought by github.com/duckdb/duckdb-go/v2
// (cgo); jetlake and every other test binary stay without it. DuckDB
// cannot reach S3 from the tests (its httpfs extension would be
// downloaded), so the test downloads the objects from MinIO into a
// temporary directory under their keys and queries the files there.
//
// The test starts nats-server and MinIO and skips under -short, as every
// integration test does; it is left out of -race builds, which make test
// runs with -short, so that only one test binary links DuckDB.
package querytest
