package iceberg

import (
	"fmt"
	"os"

	"github.com/jetlake/jetlake/config"
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
