package lake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/iceberg"
)

// icebergFiles is what Verify knows of a connector's Iceberg table: the
// data files of its current snapshot, as object keys. Only those are in
// the table; other data files under its data folder are stored and wait
// for a commit.
type icebergFiles struct {
	name        string
	dataPrefix  string
	keys        map[string]bool // of the current snapshot
	seen        map[string]bool // of those, found in the bucket
	uncommitted int             // data files under the folder in no commit
	missingTbl  bool            // the table does not exist yet
}

// tableFiles loads the data files of the current snapshot of a connector's
// table, or returns nil for a connector without [iceberg].
func tableFiles(ctx context.Context, cfg *config.Connector) (*icebergFiles, error) {
	if cfg.Iceberg == nil {
		return nil, nil
	}
	icfg, dataPrefix, err := iceberg.ConnectorConfig(cfg)
	if err != nil {
		return nil, err
	}
	f := &icebergFiles{name: cfg.Iceberg.Namespace + "." + cfg.Iceberg.Table, dataPrefix: dataPrefix, keys: map[string]bool{}, seen: map[string]bool{}}
	t, err := iceberg.Load(ctx, icfg)
	if errors.Is(err, iceberg.ErrNoSuchTable) {
		f.missingTbl = true
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	defer t.Close()
	locs, err := t.Files(ctx)
	if err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", f.name, err)
	}
	for _, loc := range locs {
		f.keys[strings.TrimPrefix(loc, "s3://"+cfg.S3.Bucket+"/")] = true
	}
	return f, nil
}

// has reports whether key is a data file of the table, and notes it seen.
func (f *icebergFiles) has(key string) bool {
	if f.keys[key] {
		f.seen[key] = true
		return true
	}
	return false
}

// notes says how the table narrowed the check.
func (f *icebergFiles) notes() []string {
	var out []string
	if f.missingTbl {
		out = append(out, fmt.Sprintf("the Iceberg table %s does not exist yet", f.name))
	} else {
		out = append(out, fmt.Sprintf("only the %d data files of the Iceberg table %s's current snapshot count", len(f.keys), f.name))
	}
	if f.uncommitted > 0 {
		out = append(out, fmt.Sprintf("%d data files under %s/ are not in the current snapshot: stored and waiting for a commit (a running exporter commits them every commit_interval, a stopped one at its next start), or replaced by compaction and kept for older snapshots until they expire", f.uncommitted, f.dataPrefix))
	}
	return out
}

// missing reports the table's data files that are not in the bucket.
func (f *icebergFiles) missing() []string {
	var out []string
	for key := range f.keys {
		if !f.seen[key] {
			out = append(out, fmt.Sprintf("%s: a data file of the Iceberg table %s is not in the bucket", key, f.name))
		}
	}
	slices.Sort(out)
	return out
}
