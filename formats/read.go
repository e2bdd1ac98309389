package formats

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

// Sequences reads back the stream sequence of every record of an object
// this package wrote, named key: its extension names the format and the
// compression (see ObjectType). JSON lines and arrays hold them when
// written with Options.Metadata, compressed or not, and parquet always;
// raw objects hold payloads only (ErrNoRecords).
func Sequences(key string, body []byte) ([]uint64, error) {
	kind := key // the key without its compression suffix, which names the format
	switch {
	case strings.HasSuffix(kind, ".gz"):
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		kind = strings.TrimSuffix(kind, ".gz")
	case strings.HasSuffix(kind, ".zst"):
		zr, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		if body, err = zr.DecodeAll(body, nil); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		kind = strings.TrimSuffix(kind, ".zst")
	case strings.HasSuffix(kind, ".parquet"):
		type row struct {
			Sequence int64 `parquet:"sequence"`
		}
		rows, err := parquet.Read[row](bytes.NewReader(body), int64(len(body)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out := make([]uint64, len(rows))
		for i, r := range rows {
			out[i] = uint64(r.Sequence)
		}
		return out, nil
	}
	var out []uint64
	type rec struct {
		Sequence *uint64 `json:"sequence"`
	}
	add := func(r rec, where string) error {
		if r.Sequence == nil {
			return fmt.Errorf("%s: %s has no sequence: verify needs include_metadata = true", key, where)
		}
		out = append(out, *r.Sequence)
		return nil
	}
	switch {
	case strings.HasSuffix(kind, ".jsonl"):
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<30)
		for n := 1; sc.Scan(); n++ {
			var r rec
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", key, n, err)
			}
			if err := add(r, fmt.Sprintf("line %d", n)); err != nil {
				return nil, err
			}
		}
		return out, sc.Err()
	case strings.HasSuffix(kind, ".json"):
		var rs []rec
		if err := json.Unmarshal(body, &rs); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		for i, r := range rs {
			if err := add(r, fmt.Sprintf("element %d", i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: %w", key, ErrNoRecords)
}

// ErrNoRecords says an object's records can not be read back one by one:
// raw objects hold the payloads only.
var ErrNoRecords = errors.New("raw objects hold payloads only, with no sequence per record")
