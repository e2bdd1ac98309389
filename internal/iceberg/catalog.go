package iceberg

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	gluecat "github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// file IO
	"github.com/apache/iceberg-go/table"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // a PostgreSQL catalog's driver
	_ "modernc.org/sqlite"           // the embedded catalog's driver

	"github.com/jetlake/jetlake/config"
)

// REST holds what a REST catalog needs besides its URI. Secrets are read
// from the environment by the caller.
type REST struct {
	Warehouse    string // the warehouse asked for; empty asks for none
	Token        string // a bearer token, or empty
	Credential   string // an OAuth2 client credential "id:secret", or empty
	SigV4Service string // sign requests with AWS SigV4 for this service, or empty
	Region       string // SigV4's region
}

// Glue holds what the AWS Glue catalog needs. Its credentials are the AWS
// SDK's default chain: the environment, shared files, instance roles.
type Glue struct {
	Region    string
	CatalogID string // the account whose catalog it is; empty is the caller's
}

// openCatalog opens the catalog of cfg.
func openCatalog(ctx context.Context, cfg Config) (*Table, error) {
	props := catalogProperties(cfg)
	t := &Table{ident: table.Identifier{cfg.Namespace, cfg.Table}}
	var err error
	switch cfg.Type {
	case "", "sql":
		t.cat, t.close, err = openSQLCatalog(cfg, props)
	case "rest":
		t.cat, t.close, err = openRESTCatalog(ctx, cfg, props)
	case "glue":
		t.cat, t.close, err = openGlueCatalog(ctx, cfg, props)
	default:
		return nil, fmt.Errorf("iceberg catalog type %q: want sql, rest or glue", cfg.Type)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// catalogProperties returns the properties every catalog type is given:
// the warehouse, the table's location and the S3 file IO's settings.
func catalogProperties(cfg Config) iceberg.Properties {
	props := iceberg.Properties{
		iceio.S3Region: cfg.S3.Region,
		"warehouse":    cfg.Warehouse,
		// Every catalog serves one table: its file IO removes nothing
		// outside the table's location, whatever the metadata names.
		tableLocationProperty: cfg.Location(),
	}
	if cfg.S3.AccessKeyID != "" {
		props[iceio.S3AccessKeyID] = cfg.S3.AccessKeyID
		props[iceio.S3SecretAccessKey] = cfg.S3.SecretAccessKey
	}
	if cfg.S3.Endpoint != "" {
		props[iceio.S3EndpointURL] = cfg.S3.Endpoint
	}
	if cfg.S3.TLSCAFile != "" {
		props[S3CAFileProperty] = cfg.S3.TLSCAFile
	}
	return props
}

// openSQLCatalog opens a SQL catalog on the database of cfg.URI and
// returns it with the function that closes that database. A URI that
// cannot be opened is a *MismatchError.
func openSQLCatalog(cfg Config, props iceberg.Properties) (catalog.Catalog, func() error, error) {
	db, dialect, err := openDB(cfg.URI)
	if err != nil {
		return nil, nil, &MismatchError{Diffs: []string{err.Error()}}
	}
	cat, err := sqlcat.NewCatalog(cfg.Catalog, db, dialect, props)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("iceberg catalog %s: %w", config.RedactURL(cfg.URI), err)
	}
	return cat, db.Close, nil
}

// openRESTCatalog opens the REST catalog at cfg.URI and returns it with
// the function that closes it and its transport's idle connections.
func openRESTCatalog(ctx context.Context, cfg Config, props iceberg.Properties) (catalog.Catalog, func() error, error) {
	delete(props, "warehouse")
	tr, err := newRESTTransport(cfg.URI)
	if err != nil {
		return nil, nil, err
	}
	opts := []rest.Option{rest.WithAdditionalProps(props), rest.WithCustomTransport(tr)}
	if cfg.REST.Warehouse != "" {
		opts = append(opts, rest.WithWarehouseLocation(cfg.REST.Warehouse))
	}
	auth, err := restAuthOptions(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	cat, err := rest.NewCatalog(ctx, cfg.Catalog, cfg.URI, append(opts, auth...)...)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, fmt.Errorf("iceberg catalog %s: %w", config.RedactURL(cfg.URI), err)
	}
	closeCat := func() error {
		err := cat.Close()
		tr.CloseIdleConnections()
		return err
	}
	return cat, closeCat, nil
}

// restAuthOptions returns the options that authenticate to a REST
// catalog: a bearer token, else an OAuth2 credential, else SigV4 signing
// with the AWS SDK's default credentials; none when cfg names none.
func restAuthOptions(ctx context.Context, cfg Config) ([]rest.Option, error) {
	switch {
	case cfg.REST.Token != "":
		return []rest.Option{rest.WithOAuthToken(cfg.REST.Token)}, nil
	case cfg.REST.Credential != "":
		return []rest.Option{rest.WithCredential(cfg.REST.Credential)}, nil
	case cfg.REST.SigV4Service != "":
		aws, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cfg.REST.Region))
		if err != nil {
			return nil, fmt.Errorf("iceberg catalog %s: AWS credentials for SigV4: %w", config.RedactURL(cfg.URI), err)
		}
		return []rest.Option{rest.WithAwsConfig(aws), rest.WithSigV4RegionSvc(cfg.REST.Region, cfg.REST.SigV4Service)}, nil
	}
	return nil, nil
}

// openGlueCatalog opens the AWS Glue catalog of cfg (at cfg.URI when one
// is set, as for a stand-in) and returns it with its Close.
func openGlueCatalog(ctx context.Context, cfg Config, props iceberg.Properties) (catalog.Catalog, func() error, error) {
	loads := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(cfg.Glue.Region)}
	if cfg.URI != "" {
		loads = append(loads, awsconfig.WithBaseEndpoint(cfg.URI))
	}
	aws, err := awsconfig.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg catalog glue %s: AWS configuration: %w", config.RedactURL(cfg.URI), err)
	}
	if cfg.Glue.CatalogID != "" {
		props[gluecat.CatalogIdKey] = cfg.Glue.CatalogID
	}
	cat, err := gluecat.NewCatalog(gluecat.WithAwsConfig(aws), gluecat.WithAwsProperties(gluecat.AwsProperties(props)))
	if err != nil {
		return nil, nil, fmt.Errorf("iceberg catalog glue: %w", err)
	}
	return cat, cat.Close, nil
}

// NoCatalogFolderError is a sqlite catalog whose folder does not exist:
// sqlite creates the file, never its folder, so no retry can succeed.
type NoCatalogFolderError struct {
	URI    string // the [iceberg] uri
	Folder string // the folder that does not exist
}

// Error says what is missing and what to do.
func (e *NoCatalogFolderError) Error() string {
	return fmt.Sprintf("iceberg catalog %s: the folder %s does not exist (sqlite creates the catalog file, not its folder): create the folder, or fix [iceberg] uri", config.RedactURL(e.URI), e.Folder)
}

// openDB opens the database of a SQL catalog URI: an embedded sqlite file,
// or a PostgreSQL server (the Java JdbcCatalog's tables, so that Spark and
// Trino JDBC catalogs can share it). Its errors show the URI redacted.
func openDB(uri string) (*sql.DB, sqlcat.SupportedDialect, error) {
	if path, ok := strings.CutPrefix(uri, "sqlite://"); ok && path != "" {
		if _, err := os.Stat(filepath.Dir(path)); errors.Is(err, fs.ErrNotExist) {
			return nil, "", &NoCatalogFolderError{URI: uri, Folder: filepath.Dir(path)}
		}
		// Every pooled connection waits for a lock rather than failing,
		// and readers do not block the writer.
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
		if err != nil {
			return nil, "", fmt.Errorf("iceberg catalog %s: %w", config.RedactURL(uri), err)
		}
		return db, sqlcat.SQLite, nil
	}
	if strings.HasPrefix(uri, "postgres://") || strings.HasPrefix(uri, "postgresql://") {
		pc, err := pgx.ParseConfig(uri)
		if err != nil {
			// pgx quotes the URI with only its password hidden.
			msg := strings.ReplaceAll(err.Error(), uri, config.RedactURL(uri))
			if i := strings.Index(msg, "cannot parse `"); i >= 0 {
				if j := strings.Index(msg[i:], "`: "); j >= 0 {
					msg = msg[:i] + "cannot parse the uri" + msg[i+j+1:]
				}
			}
			return nil, "", fmt.Errorf("iceberg catalog %s: %s", config.RedactURL(uri), msg)
		}
		return sql.OpenDB(oneLineConnector{stdlib.GetConnector(*pc)}), sqlcat.Postgres, nil
	}
	return nil, "", fmt.Errorf("iceberg catalog uri %q: want sqlite:///path/to/catalog.db or postgres://user@host:port/database", config.RedactURL(uri))
}

// oneLineConnector connects to PostgreSQL with errors of one line: pgx
// puts the error of each address it tried (IPv4 and IPv6 of a name, TLS
// and then plain text) on a line of its own, and a log line or a problem
// is one line.
type oneLineConnector struct{ driver.Connector }

// Connect connects, or returns the driver's error as a *OneLineError.
func (c oneLineConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, &OneLineError{Err: err}
	}
	return conn, nil
}

// OneLineError is an error whose message spans lines, shown on one: each
// line break and the indent after it become "; ", or a space after a ':'.
type OneLineError struct{ Err error }

// Error returns the message of Err on one line.
func (e *OneLineError) Error() string { return oneLine(e.Err.Error()) }

// Unwrap returns Err.
func (e *OneLineError) Unwrap() error { return e.Err }

func oneLine(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		switch {
		case b.Len() == 0:
		case strings.HasSuffix(b.String(), ":"):
			b.WriteByte(' ')
		default:
			b.WriteString("; ")
		}
		b.WriteString(line)
	}
	return b.String()
}
