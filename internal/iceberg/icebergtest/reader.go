// Package icebergtest reads Iceberg tables for tests as an independent
// reader would, without iceberg-go: the catalog's row, the metadata file,
// the current snapshot's manifest list, its manifests (Avro) and the data
// files (parquet).
package icebergtest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/parquet-go/parquet-go"
	"github.com/twmb/avro/ocf"
)

// Table is what the reader finds in a table.
type Table struct {
	Snapshots int
	Files     []File
}

// File is one live data file of the current snapshot.
type File struct {
	Path     string
	Records  int64 // as the manifest entry says
	Seqs     []uint64
	Subjects map[string]bool
	Hours    map[int64]bool // unix hours of the rows' timestamps
	// Partition is the manifest entry's partition, by partition field
	// name, as the Avro decoder reads it.
	Partition map[string]any
}

// Get returns the body of an s3:// location.
type Get func(loc string) ([]byte, error)

// MinIOGet returns a Get of the objects of bucket through mc.
func MinIOGet(mc *minio.Client, bucket string) Get {
	return func(loc string) ([]byte, error) {
		key, ok := strings.CutPrefix(loc, "s3://"+bucket+"/")
		if !ok {
			return nil, fmt.Errorf("%s is not in bucket %s", loc, bucket)
		}
		r, err := mc.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
}

// Read reads the table ns.name of the SQL catalog catalogName in db (a
// PostgreSQL database when postgres is set, sqlite otherwise).
func Read(db *sql.DB, postgres bool, catalogName, ns, name string, get Get) (*Table, error) {
	ctx := context.Background()
	q := "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?"
	if postgres {
		q = "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3"
	}
	var metaLoc string
	if err := db.QueryRowContext(ctx, q, catalogName, ns, name).Scan(&metaLoc); err != nil {
		return nil, fmt.Errorf("catalog row: %w", err)
	}
	return ReadMetadata(metaLoc, get)
}

// ReadMetadata reads the table whose current metadata file is at metaLoc,
// as Read does once it has found that location in the catalog: for tables
// of catalogs other than SQL ones.
func ReadMetadata(metaLoc string, get Get) (*Table, error) {
	body, err := get(metaLoc)
	if err != nil {
		return nil, err
	}
	var meta struct {
		Current   *int64 `json:"current-snapshot-id"`
		Snapshots []struct {
			ID           int64  `json:"snapshot-id"`
			ManifestList string `json:"manifest-list"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return nil, fmt.Errorf("%s: %w", metaLoc, err)
	}
	out := &Table{Snapshots: len(meta.Snapshots)}
	if meta.Current == nil || *meta.Current == -1 {
		return out, nil
	}
	var list string
	for _, s := range meta.Snapshots {
		if s.ID == *meta.Current {
			list = s.ManifestList
		}
	}
	if list == "" {
		return nil, fmt.Errorf("%s: the current snapshot %d is not among the snapshots", metaLoc, *meta.Current)
	}
	manifests, err := avroRecords(get, list)
	if err != nil {
		return nil, err
	}
	for _, m := range manifests {
		if content, _ := m["content"].(int32); content != 0 {
			continue // delete files: jetlake writes none
		}
		path, _ := m["manifest_path"].(string)
		entries, err := avroRecords(get, path)
		if err != nil {
			return nil, err
		}
		for _, entry := range entries {
			if status, _ := entry["status"].(int32); status == 2 {
				continue // deleted
			}
			df, _ := entry["data_file"].(map[string]any)
			f := File{Subjects: map[string]bool{}, Hours: map[int64]bool{}}
			f.Path, _ = df["file_path"].(string)
			f.Records, _ = df["record_count"].(int64)
			f.Partition, _ = df["partition"].(map[string]any)
			if err := readDataFile(get, &f); err != nil {
				return nil, err
			}
			out.Files = append(out.Files, f)
		}
	}
	return out, nil
}

// avroRecords decodes every record of an Avro object container file.
func avroRecords(get Get, loc string) ([]map[string]any, error) {
	body, err := get(loc)
	if err != nil {
		return nil, err
	}
	r, err := ocf.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	defer r.Close()
	var out []map[string]any
	for {
		var rec map[string]any
		err := r.Decode(&rec)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", loc, err)
		}
		out = append(out, rec)
	}
}

// readDataFile reads a data file's sequences, subjects and hours.
func readDataFile(get Get, f *File) error {
	body, err := get(f.Path)
	if err != nil {
		return err
	}
	type row struct {
		Subject   string    `parquet:"subject"`
		Sequence  int64     `parquet:"sequence"`
		Timestamp time.Time `parquet:"timestamp"`
	}
	rows, err := parquet.Read[row](bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	for _, r := range rows {
		f.Seqs = append(f.Seqs, uint64(r.Sequence))
		f.Subjects[r.Subject] = true
		f.Hours[r.Timestamp.Unix()/3600] = true
	}
	return nil
}

// Check reports what is wrong with what the reader found: sequences
// 1..last each in exactly one file, each file of one subject and one hour,
// holding as many rows as its manifest entry says.
func (tr *Table) Check(last uint64) []string {
	var problems []string
	seen := map[uint64]string{}
	for _, f := range tr.Files {
		if int64(len(f.Seqs)) != f.Records {
			problems = append(problems, fmt.Sprintf("%s: %d rows, its manifest entry says %d", f.Path, len(f.Seqs), f.Records))
		}
		if len(f.Subjects) != 1 || len(f.Hours) != 1 {
			problems = append(problems, fmt.Sprintf("%s: %d subjects and %d hours, want one of each", f.Path, len(f.Subjects), len(f.Hours)))
		}
		for _, q := range f.Seqs {
			if prev, dup := seen[q]; dup {
				problems = append(problems, fmt.Sprintf("sequence %d is in %s and %s", q, prev, f.Path))
			}
			seen[q] = f.Path
		}
	}
	for q := uint64(1); q <= last; q++ {
		if _, ok := seen[q]; !ok {
			problems = append(problems, fmt.Sprintf("sequence %d is in no file", q))
		}
	}
	if uint64(len(seen)) != last {
		problems = append(problems, fmt.Sprintf("%d sequences in the table, want %d", len(seen), last))
	}
	return problems
}
