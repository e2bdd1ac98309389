package state

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/statekey"
)

// The state bucket keeps the UUID of the table a connector writes. A
// catalog that answers with another table at the same name (the catalog was
// switched, or the table dropped and made anew) is not written to and not
// swept: its plans, intents and data files are of the table before.

// RecordedTableID returns the table UUID the state bucket holds for c, or
// "" when it holds none.
func RecordedTableID(ctx context.Context, st Store, c *config.Connector) (string, error) {
	value, _, err := st.Get(ctx, statekey.TableID(c.Name, c.Iceberg.Namespace, c.Iceberg.Table))
	if errors.Is(err, ErrNoRecord) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("state bucket, key %s: %w", statekey.TableID(c.Name, c.Iceberg.Namespace, c.Iceberg.Table), err)
	}
	return string(value), nil
}

// TableChangedError reports a table whose UUID is not the one the state
// bucket recorded for the connector, or a table missing from the catalog
// though the connector wrote to one. Waiting does not fix it.
type TableChangedError struct {
	Table    string // namespace.table
	Key      string // the state-bucket key of the recorded UUID
	Recorded string
	Found    string // "" when the catalog has no such table
}

func (e *TableChangedError) Error() string {
	found := "the catalog has no such table"
	if e.Found != "" {
		found = "the catalog's table has UUID " + e.Found
	}
	return fmt.Sprintf("iceberg table %s is not the table this connector wrote: the state bucket recorded UUID %s, and %s. "+
		"The catalog was switched, or the table was dropped and made anew; jetlake neither creates, commits to nor sweeps it. "+
		"Register the table's current metadata file in this catalog, or point [iceberg] uri back at the catalog that has it; "+
		"to adopt the table as it is, delete the key %s from the state bucket (plans and intents of the table before then name files it does not hold)",
		e.Table, e.Recorded, found, e.Key)
}

// CheckTableID compares t's UUID with the one the state bucket recorded
// for c, and records it when there is none yet. An unrecorded table is
// recorded only when record is set (run does; compact only reads).
func CheckTableID(ctx context.Context, st Store, c *config.Connector, t *iceberg.Table, record bool) error {
	key := statekey.TableID(c.Name, c.Iceberg.Namespace, c.Iceberg.Table)
	for {
		have, err := RecordedTableID(ctx, st, c)
		if err != nil {
			return err
		}
		switch {
		case have == t.UUID():
			return nil
		case have != "":
			return &failure.Permanent{Code: "IcebergTableChanged", Err: &TableChangedError{Table: t.Name(), Key: key, Recorded: have, Found: t.UUID()}}
		case !record:
			return nil
		}
		_, err = st.Update(ctx, key, []byte(t.UUID()), 0)
		if err == nil || !errors.Is(err, ErrRecordChanged) && !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		// Another instance recorded one meanwhile: compare with it.
	}
}

// RefuseMissingTable returns a *TableChangedError when the state bucket
// recorded a table for c but the catalog has none by its name: opening
// would create an empty table at the same location, and the files of the
// one before would be its orphans.
func RefuseMissingTable(ctx context.Context, st Store, c *config.Connector, cfg iceberg.Config) error {
	have, err := RecordedTableID(ctx, st, c)
	if err != nil || have == "" {
		return err
	}
	t, err := iceberg.Load(ctx, cfg)
	if errors.Is(err, iceberg.ErrNoSuchTable) {
		return &failure.Permanent{Code: "IcebergTableChanged", Err: &TableChangedError{Table: cfg.Namespace + "." + cfg.Table, Key: statekey.TableID(c.Name, c.Iceberg.Namespace, c.Iceberg.Table), Recorded: have}}
	}
	if err != nil {
		return err
	}
	return t.Close()
}

// OwnFile reports whether md, a data file's object metadata, says c wrote
// it for the table with UUID id.
func OwnFile(md map[string]string, c *config.Connector, id string) bool {
	return id != "" && md[objstore.MetaConnector] == c.Name && md[objstore.MetaTable] == id
}
