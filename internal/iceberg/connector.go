package iceberg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// ConnectorConfig returns the table settings of a connector with [iceberg],
// and the object key prefix of its data files.
func ConnectorConfig(c *config.Connector) (Config, string, error) {
	ic, s3 := c.Iceberg, c.S3
	warehouse := "s3://" + s3.Bucket
	dataPrefix := ic.Namespace + "/" + ic.Table + "/data"
	if s3.Prefix != "" {
		warehouse += "/" + s3.Prefix
		dataPrefix = s3.Prefix + "/" + dataPrefix
	}
	cfg := Config{
		Catalog: c.Name, Type: ic.Catalog, URI: ic.URI, Namespace: ic.Namespace, Table: ic.Table, Warehouse: warehouse,
		S3:           S3{Endpoint: s3.Endpoint, Region: s3.Region, TLSCAFile: s3.TLSCAFile},
		Partitioning: ic.Partitioning,
		Glue:         Glue{Region: ic.Region, CatalogID: ic.CatalogID},
		REST:         REST{Warehouse: ic.Warehouse, SigV4Service: ic.SigV4Service, Region: ic.Region},
	}
	for _, env := range []struct {
		name string
		dst  *string
	}{{ic.TokenEnv, &cfg.REST.Token}, {ic.CredentialEnv, &cfg.REST.Credential}} {
		if env.name == "" {
			continue
		}
		if *env.dst = os.Getenv(env.name); *env.dst == "" {
			return cfg, "", fmt.Errorf("iceberg catalog %s: the environment variable %s, named in [iceberg], is not set", config.RedactURL(ic.URI), env.name)
		}
	}
	if s3.AccessKeyIDEnv != "" {
		cfg.S3.AccessKeyID, cfg.S3.SecretAccessKey = os.Getenv(s3.AccessKeyIDEnv), os.Getenv(s3.SecretAccessKeyEnv)
	}
	return cfg, dataPrefix, nil
}

// CheckConnector says, for jetlake plan, whether a connector's Iceberg table can
// be written: the catalog answers, and the table exists and fits the
// connector, or does not exist yet and is created on the first start.
func CheckConnector(ctx context.Context, c *config.Connector) (string, error) {
	cfg, _, err := ConnectorConfig(c)
	if err != nil {
		return "", err
	}
	t, err := Load(ctx, cfg)
	if errors.Is(err, ErrNoSuchTable) {
		return fmt.Sprintf("does not exist yet; jetlake creates it on first start at %s/%s/%s", cfg.Warehouse, cfg.Namespace, cfg.Table), nil
	}
	if err != nil {
		return "", err
	}
	defer t.Close()
	ev, err := t.Fits(formats.Fields(c.Output.FormatsOptions()), c.Iceberg.Partitioning)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("exists at %s with %d snapshots and fits the connector", t.Location(), t.Snapshots())
	if !ev.Empty() {
		msg = fmt.Sprintf("exists at %s with %d snapshots; on start jetlake %s", t.Location(), t.Snapshots(), ev)
	}
	u, err := t.Upkeep(ctx, CompactOptions{TargetSize: c.Rotation.MaxFileSize, ClosedBefore: time.Now().Add(-c.Iceberg.CompactAfter)})
	if err != nil {
		return "", err
	}
	if u.Compactable > 0 {
		msg += fmt.Sprintf("; %d of its %d data files are small files of closed partitions, the oldest closed %s ago: jetlake run compacts them, or jetlake compact",
			u.Compactable, u.DataFiles, u.OldestClosed.Round(time.Second))
	}
	return msg, nil
}

// ColumnNames returns the names of out's typed columns, in the order of
// the values a Partitioner takes.
func ColumnNames(out *config.Output) []string {
	names := make([]string, len(out.Columns))
	for i, c := range out.Columns {
		names[i] = c.Name
	}
	return names
}

// DataKey returns the object key jetlake gives a data file of a
// connector's Iceberg table: the table's data folder, the partition folder
// of a message of stream and subject at t, and the sequence range. plan
// shows it as a sample.
func DataKey(c *config.Connector, stream, subject string, t time.Time, first, last uint64) (string, error) {
	// A sample without a payload: typed columns are null in it.
	return DataKeyOf(c, stream, subject, t, first, last, nil)
}

// DataKeyOf is DataKey of a message whose typed columns' values, in
// [[output.columns]] order, are vals (content.Reader reads them).
func DataKeyOf(c *config.Connector, stream, subject string, t time.Time, first, last uint64, vals []formats.Value) (string, error) {
	_, dataPrefix, err := ConnectorConfig(c)
	if err != nil {
		return "", err
	}
	schema, err := Schema(formats.Fields(c.Output.FormatsOptions()))
	if err != nil {
		return "", err
	}
	spec, err := Spec(schema, c.Iceberg.Partitioning)
	if err != nil {
		return "", err
	}
	part, err := NewPartitioner(schema, spec, ColumnNames(&c.Output))
	if err != nil {
		return "", err
	}
	dir := string(part.AppendDir(nil, stream, subject, first, t, vals))
	return pathtemplate.Key(dataPrefix, dir, first, last, c.Output.Ext())
}
