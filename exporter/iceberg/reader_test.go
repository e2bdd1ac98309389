package iceberg_test

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

// tableRead is what an independent reader finds in a table, following the
// chain a query engine follows, without iceberg-go: the catalog's row, the
// metadata file, the current snapshot's manifest list, its manifests (Avro)
// and the data files (parquet).
type tableRead struct {
	snapshots int
	files     []fileRead
}

// fileRead is one live data file of the current snapshot.
type fileRead struct {
	path     string
	records  int64 // as the manifest says
	seqs     []uint64
	subjects map[string]bool
	hours    map[int64]bool // unix hours of the rows' timestamps
}

// readTable reads the table ns.name of the catalog catalogName in db.
func (e *tableEnv) readTable(db *sql.DB, postgres bool, catalogName, ns, name string) (*tableRead, error) {
	ctx := context.Background()
	q := "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?"
	if postgres {
		q = "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3"
	}
	var metaLoc string
	if err := db.QueryRowContext(ctx, q, catalogName, ns, name).Scan(&metaLoc); err != nil {
		return nil, fmt.Errorf("catalog row: %w", err)
	}
	body, err := e.object(metaLoc)
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
	out := &tableRead{snapshots: len(meta.Snapshots)}
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
	manifests, err := e.avroRecords(list)
	if err != nil {
		return nil, err
	}
	for _, m := range manifests {
		if content, _ := m["content"].(int32); content != 0 {
			continue // delete files: jetlake writes none
		}
		path, _ := m["manifest_path"].(string)
		entries, err := e.avroRecords(path)
		if err != nil {
			return nil, err
		}
		for _, entry := range entries {
			if status, _ := entry["status"].(int32); status == 2 {
				continue // deleted
			}
			df, _ := entry["data_file"].(map[string]any)
			f := fileRead{subjects: map[string]bool{}, hours: map[int64]bool{}}
			f.path, _ = df["file_path"].(string)
			f.records, _ = df["record_count"].(int64)
			if err := e.readDataFile(&f); err != nil {
				return nil, err
			}
			out.files = append(out.files, f)
		}
	}
	return out, nil
}

// object returns the body of an s3:// location in the test's bucket.
func (e *tableEnv) object(loc string) ([]byte, error) {
	key, ok := strings.CutPrefix(loc, "s3://"+e.bucket+"/")
	if !ok {
		return nil, fmt.Errorf("%s is not in bucket %s", loc, e.bucket)
	}
	r, err := e.mc.GetObject(context.Background(), e.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// avroRecords decodes every record of an Avro object container file.
func (e *tableEnv) avroRecords(loc string) ([]map[string]any, error) {
	body, err := e.object(loc)
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
func (e *tableEnv) readDataFile(f *fileRead) error {
	body, err := e.object(f.path)
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
		return fmt.Errorf("%s: %w", f.path, err)
	}
	for _, r := range rows {
		f.seqs = append(f.seqs, uint64(r.Sequence))
		f.subjects[r.Subject] = true
		f.hours[r.Timestamp.Unix()/3600] = true
	}
	return nil
}

// check reports what is wrong with what the reader found: sequences
// 1..last each in exactly one file, each file of one subject and one hour,
// holding as many rows as its manifest entry says.
func (tr *tableRead) check(last uint64) []string {
	var problems []string
	seen := map[uint64]string{}
	for _, f := range tr.files {
		if int64(len(f.seqs)) != f.records {
			problems = append(problems, fmt.Sprintf("%s: %d rows, its manifest entry says %d", f.path, len(f.seqs), f.records))
		}
		if len(f.subjects) != 1 || len(f.hours) != 1 {
			problems = append(problems, fmt.Sprintf("%s: %d subjects and %d hours, want one of each", f.path, len(f.subjects), len(f.hours)))
		}
		for _, q := range f.seqs {
			if prev, dup := seen[q]; dup {
				problems = append(problems, fmt.Sprintf("sequence %d is in %s and %s", q, prev, f.path))
			}
			seen[q] = f.path
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
