package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/jetlake/jetlake/config"
)

// sampleQuery is the query icebergDDL shows, with the table's name for %s.
const sampleQuery = "SELECT subject, count(*) AS messages, max(\"timestamp\") AS newest\nFROM %s\nWHERE \"timestamp\" > current_timestamp - INTERVAL '1' HOUR\nGROUP BY subject;\n"

// icebergDDL returns, for a connector that writes an Iceberg table, what an
// engine needs to read it: engines read an Iceberg table from a catalog,
// never from a CREATE TABLE over its files. Glue is Athena's catalog, so
// Athena already sees a table there; Trino reads any of jetlake's catalogs,
// or registers the table in a catalog of its own.
func icebergDDL(c *config.Connector, o ddlOptions) (string, []string, error) {
	ib := c.Iceberg
	location := "s3://" + c.S3.Bucket + "/"
	if c.S3.Prefix != "" {
		location += c.S3.Prefix + "/"
	}
	warehouse := strings.TrimSuffix(location, "/")
	location += ib.Namespace + "/" + ib.Table
	if o.Table != "" || o.Location != "" {
		return "", nil, fmt.Errorf("-table and -location have no meaning for the Iceberg table %s.%s: [iceberg] names it and it lives at %s", ib.Namespace, ib.Table, location)
	}
	query := sampleQuery
	var b strings.Builder
	var notes []string
	switch {
	case o.Engine == engineAthena && ib.Catalog != "glue":
		return "", nil, fmt.Errorf("writes the Iceberg table %s.%s in a %s catalog (%s); Athena reads Iceberg tables from the AWS Glue Data Catalog only: set catalog = \"glue\" in [iceberg]",
			ib.Namespace, ib.Table, ib.Catalog, config.RedactURL(ib.URI))
	case o.Engine == engineAthena:
		fmt.Fprintf(&b, "-- Athena already sees the Iceberg table %s.%s: jetlake keeps it in the Glue Data Catalog\n", ib.Namespace, ib.Table)
		fmt.Fprintf(&b, "-- (region %s%s, table_type ICEBERG). Nothing to create; a sample query:\n", ib.Region, catalogIDNote(ib.CatalogID))
		fmt.Fprintf(&b, query, fmt.Sprintf("\"%s\".\"%s\"", ib.Namespace, ib.Table))
		return b.String(), notes, nil
	}
	// Trino: a catalog file that reads the table where jetlake commits it.
	props := trinoCatalogProperties(c, warehouse)
	catalog := "iceberg"
	if props != nil {
		fmt.Fprintf(&b, "-- Trino reads the table where jetlake commits it, with a catalog file such as\n-- etc/catalog/%s.properties (secrets from the environment, as ${ENV:...}):\n", catalog)
		for _, p := range props {
			fmt.Fprintf(&b, "--   %s\n", p)
		}
		b.WriteString("-- and then, for example:\n")
		fmt.Fprintf(&b, query, fmt.Sprintf("%s.%s.%s", catalog, ib.Namespace, ib.Table))
		return b.String(), notes, nil
	}
	// An embedded sqlite catalog no engine opens: register the table in a
	// Trino Iceberg catalog of its own.
	fmt.Fprintf(&b, "-- The table is in jetlake's embedded sqlite catalog, which Trino cannot open. Register it in a\n")
	fmt.Fprintf(&b, "-- Trino Iceberg catalog (here \"%s\") whose file sets iceberg.register-table-procedure.enabled=true:\n", catalog)
	fmt.Fprintf(&b, "CREATE SCHEMA IF NOT EXISTS %s.%s;\n", catalog, ib.Namespace)
	fmt.Fprintf(&b, "CALL %s.system.register_table(schema_name => '%s', table_name => '%s', table_location => '%s');\n", catalog, ib.Namespace, ib.Table, location)
	fmt.Fprintf(&b, query, fmt.Sprintf("%s.%s.%s", catalog, ib.Namespace, ib.Table))
	notes = append(notes, "register_table points Trino at the table's newest metadata file when it runs; later commits by jetlake show after CALL "+
		catalog+".system.unregister_table(...) and register_table again. To follow every commit, use a catalog Trino shares: PostgreSQL, REST or Glue")
	return b.String(), notes, nil
}

// trinoCatalogProperties returns the lines of a Trino catalog file that
// reads the connector's catalog, or nil for a catalog Trino cannot open.
func trinoCatalogProperties(c *config.Connector, warehouse string) []string {
	ib := c.Iceberg
	props := []string{"connector.name=iceberg"}
	switch {
	case ib.Catalog == "sql" && (strings.HasPrefix(ib.URI, "postgres://") || strings.HasPrefix(ib.URI, "postgresql://")):
		u, err := url.Parse(ib.URI)
		if err != nil {
			return nil
		}
		user := u.User.Username()
		u.User = nil
		u.Scheme = "postgresql"
		props = append(props,
			"iceberg.catalog.type=jdbc",
			"iceberg.jdbc-catalog.driver-class=org.postgresql.Driver",
			"iceberg.jdbc-catalog.connection-url=jdbc:"+u.String(),
			"iceberg.jdbc-catalog.connection-user="+user,
			"iceberg.jdbc-catalog.connection-password=${ENV:PGPASSWORD}",
			"iceberg.jdbc-catalog.catalog-name="+c.Name,
			"iceberg.jdbc-catalog.default-warehouse-dir="+warehouse)
	case ib.Catalog == "rest":
		props = append(props, "iceberg.catalog.type=rest", "iceberg.rest-catalog.uri="+ib.URI)
		if ib.Warehouse != "" {
			props = append(props, "iceberg.rest-catalog.warehouse="+ib.Warehouse)
		}
		switch {
		case ib.TokenEnv != "":
			props = append(props, "iceberg.rest-catalog.security=OAUTH2", "iceberg.rest-catalog.oauth2.token=${ENV:"+ib.TokenEnv+"}")
		case ib.CredentialEnv != "":
			props = append(props, "iceberg.rest-catalog.security=OAUTH2", "iceberg.rest-catalog.oauth2.credential=${ENV:"+ib.CredentialEnv+"}")
		}
	case ib.Catalog == "glue":
		props = append(props, "iceberg.catalog.type=glue", "hive.metastore.glue.region="+ib.Region)
		if ib.CatalogID != "" {
			props = append(props, "hive.metastore.glue.catalogid="+ib.CatalogID)
		}
	default:
		return nil
	}
	props = append(props, "fs.native-s3.enabled=true", "s3.region="+c.S3.Region)
	if c.S3.Endpoint != "" {
		props = append(props, "s3.endpoint="+c.S3.Endpoint, fmt.Sprintf("s3.path-style-access=%t", c.S3.PathStyle))
	}
	if c.S3.AccessKeyIDEnv != "" {
		props = append(props, "s3.aws-access-key=${ENV:"+c.S3.AccessKeyIDEnv+"}", "s3.aws-secret-key=${ENV:"+c.S3.SecretAccessKeyEnv+"}")
	}
	return props
}

func catalogIDNote(id string) string {
	if id == "" {
		return ""
	}
	return ", catalog " + id
}
