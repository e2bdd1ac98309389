package lake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/pathtemplate"
)

// TableSnapshot is the snapshot of a connector's Iceberg table a Catalog
// was read from.
type TableSnapshot struct {
	Table string // namespace.table
	iceberg.SnapshotInfo
	Files int // its data files, of every stream
}

// ReadTableCatalog is ReadCatalog for a connector with [iceberg]: the data
// objects are the data files of one snapshot of the connector's table,
// snapshot, or its current one when snapshot is 0, and no other. A data
// file stored and not committed yet, or one a compaction replaced after
// the snapshot, is not read: the snapshot's manifests name what it holds.
// Each file's object metadata says which stream, incarnation and
// sequences it holds, as a data object's does; compacted files hold the
// rows of many batches of one stream. Files of the snapshot outside the
// connector's bucket, or without jetlake's metadata, were added by
// another engine and are left out. Loss markers and rejected objects are
// under the connector's prefix, as ReadCatalog reads them.
//
// It returns an error for a snapshot that holds delete files (rows
// another engine deleted: restored, they would come back), for one that
// names data files the bucket does not hold, and for one that holds no
// data file of stream.
func ReadTableCatalog(ctx context.Context, cfg *config.Connector, stream string, created time.Time, snapshot int64, store objstore.ObjectReader) (*Catalog, *TableSnapshot, error) {
	icfg, _, err := iceberg.ConnectorConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	name := cfg.Iceberg.Namespace + "." + cfg.Iceberg.Table
	t, err := iceberg.Load(ctx, icfg)
	if errors.Is(err, iceberg.ErrNoSuchTable) {
		return nil, nil, fmt.Errorf("the Iceberg table %s does not exist: nothing to restore", name)
	}
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	files, err := t.SnapshotFilesOf(ctx, snapshot)
	if err != nil {
		return nil, nil, err
	}
	snap := &TableSnapshot{Table: name, SnapshotInfo: files.SnapshotInfo, Files: len(files.Data)}
	if files.Deletes > 0 {
		return nil, snap, fmt.Errorf("iceberg table %s, snapshot %d: it holds %d delete files (rows another engine deleted); restore does not apply deletes, and would bring those rows back", name, files.ID, files.Deletes)
	}
	bucket := "s3://" + cfg.S3.Bucket + "/"
	var keys []string
	for _, loc := range files.Data {
		if key, ok := strings.CutPrefix(loc, bucket); ok {
			keys = append(keys, key)
		}
	}
	mds, err := headFiles(ctx, store, keys)
	if err != nil {
		return nil, snap, fmt.Errorf("iceberg table %s, snapshot %d: %w", name, files.ID, err)
	}
	view := &snapshotView{ObjectReader: store, keys: keys, mds: mds,
		own: []string{
			pathtemplate.StreamPrefix(cfg.S3.Prefix, pathtemplate.Lost, stream),
			pathtemplate.StreamPrefix(cfg.S3.Prefix, pathtemplate.Rejected, stream),
		}}
	cat, err := ReadCatalog(ctx, cfg, stream, created, view)
	if err != nil {
		return nil, snap, err
	}
	if len(cat.Data) == 0 {
		which := "current snapshot"
		if !files.Current {
			which = "snapshot"
		}
		of := ""
		if !created.IsZero() {
			of = " created " + created.UTC().Format(time.RFC3339Nano)
		}
		return nil, snap, fmt.Errorf("stream %s%s: the Iceberg table %s's %s %d holds no data file of it (%d data files in all)", stream, of, name, which, files.ID, len(files.Data))
	}
	return cat, snap, nil
}

// headFiles returns the object metadata of keys, 16 at a time; an error
// names the keys the store does not hold.
func headFiles(ctx context.Context, store objstore.ObjectReader, keys []string) ([]map[string]string, error) {
	mds := make([]map[string]string, len(keys))
	missing := make([]bool, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, key := range keys {
		g.Go(func() error {
			md, err := store.Head(gctx, key)
			if errors.Is(err, objstore.ErrNotFound) {
				missing[i] = true
				return nil
			}
			if err != nil {
				return fmt.Errorf("data file %s: %w", key, err)
			}
			mds[i] = md
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var gone []string
	for i, m := range missing {
		if m {
			gone = append(gone, keys[i])
		}
	}
	if len(gone) > 0 {
		return nil, fmt.Errorf("%d of its data files are not in the bucket (verify reports them), the first %s", len(gone), gone[0])
	}
	return mds, nil
}

// snapshotView is a store as ReadCatalog lists it for a table's snapshot:
// the loss markers and rejected objects under own, then the snapshot's
// data files, with their metadata, and nothing else.
type snapshotView struct {
	objstore.ObjectReader
	own  []string // key prefixes listed from the store
	keys []string // the snapshot's data files
	mds  []map[string]string
}

// List ignores prefix: it lists what the view holds.
func (v *snapshotView) List(ctx context.Context, _ string, fn func(key string, md map[string]string) error) error {
	for _, p := range v.own {
		if err := v.ObjectReader.List(ctx, p, fn); err != nil {
			return err
		}
	}
	for i, key := range v.keys {
		if v.mds[i][objstore.MetaStream] == "" {
			continue // not jetlake's
		}
		if err := fn(key, v.mds[i]); err != nil {
			return err
		}
	}
	return nil
}
