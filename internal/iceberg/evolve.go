package iceberg

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Evolution is how a table's schema must change to take what a connector
// writes. Columns are matched by name. A column the connector writes and
// the table lacks is added, optional, so that older rows read it as null;
// an int column the connector now writes as long is widened. Everything
// else that differs is refused: jetlake never drops, renames or retypes a
// column, and never changes the partitioning.
type Evolution struct {
	Add     []iceberg.NestedField // the connector's columns, as they are added
	Widen   []Widening
	Refused []string // each names the column and what to do
}

// Widening is a column whose type becomes a wider one.
type Widening struct {
	Name     string
	From, To iceberg.Type
}

// Empty reports whether the schema needs no change.
func (e Evolution) Empty() bool { return len(e.Add) == 0 && len(e.Widen) == 0 }

// String describes the changes: "adds column score long; widens count from
// int to long".
func (e Evolution) String() string {
	var parts []string
	for _, f := range e.Add {
		parts = append(parts, fmt.Sprintf("adds column %s %s", f.Name, f.Type))
	}
	for _, w := range e.Widen {
		parts = append(parts, fmt.Sprintf("widens %s from %s to %s", w.Name, w.From, w.To))
	}
	return strings.Join(parts, "; ")
}

// Evolve compares a table's schema and spec with what a connector writes
// (want and wantSpec, as Schema and Spec make them) and returns the
// changes to make and those refused.
func Evolve(have *iceberg.Schema, haveSpec iceberg.PartitionSpec, want *iceberg.Schema, wantSpec iceberg.PartitionSpec) Evolution {
	var ev Evolution
	for _, w := range want.Fields() {
		h, ok := have.FindFieldByName(w.Name)
		switch {
		case !ok:
			ev.Add = append(ev.Add, iceberg.NestedField{Name: w.Name, Type: w.Type, Required: false})
		case h.Type.Equals(w.Type):
			if !h.Required && w.Required {
				continue // a required column reads fine as an optional one
			}
			if h.Required && !w.Required {
				ev.Refused = append(ev.Refused, fmt.Sprintf("column %s is required in the table, but the connector may leave it null; use a new column name, or a new table", w.Name))
			}
		case widens(h.Type, w.Type):
			if h.Required && !w.Required {
				ev.Refused = append(ev.Refused, fmt.Sprintf("column %s is required in the table, but the connector may leave it null; use a new column name, or a new table", w.Name))
				continue
			}
			ev.Widen = append(ev.Widen, Widening{Name: w.Name, From: h.Type, To: w.Type})
		default:
			ev.Refused = append(ev.Refused, fmt.Sprintf("column %s is %s in the table, the connector writes %s: changing a column's type is refused (only int to long and float to double widen); write it under a new column name, or to a new table", w.Name, h.Type, w.Type))
		}
	}
	for _, h := range have.Fields() {
		if _, ok := want.FindFieldByName(h.Name); !ok {
			ev.Refused = append(ev.Refused, fmt.Sprintf("column %s %s is in the table but not written by the connector: dropping or renaming a column is refused; add it back to the connector (a renamed column keeps its old name), or use a new table", h.Name, h.Type))
		}
	}
	hs, ws := specFields(have, haveSpec), specFields(want, wantSpec)
	if strings.Join(hs, ", ") != strings.Join(ws, ", ") {
		ev.Refused = append(ev.Refused, fmt.Sprintf("the table is partitioned by [%s], the connector by [%s]: "+
			"jetlake does not change a table's partitioning; set [iceberg] partitioning = %s, "+
			"or give [iceberg] table a new name to start a table partitioned the new way", strings.Join(hs, ", "), strings.Join(ws, ", "), partitioningTOML(hs)))
	}
	return ev
}

// widens reports whether a column of type from may become to: the type
// promotions the Iceberg spec allows for the types jetlake writes.
func widens(from, to iceberg.Type) bool {
	return from.Equals(iceberg.PrimitiveTypes.Int32) && to.Equals(iceberg.PrimitiveTypes.Int64) ||
		from.Equals(iceberg.PrimitiveTypes.Float32) && to.Equals(iceberg.PrimitiveTypes.Float64)
}

// evolve applies ev to tbl in one schema change and returns the table as
// committed.
func evolve(ctx context.Context, tbl *table.Table, ev Evolution) (*table.Table, error) {
	tx := tbl.NewTransaction()
	us := tx.UpdateSchema(true, false)
	for _, f := range ev.Add {
		us.AddColumn([]string{f.Name}, f.Type, "", false, nil)
	}
	for _, w := range ev.Widen {
		us.UpdateColumn([]string{w.Name}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: w.To}})
	}
	if err := us.Commit(); err != nil {
		return nil, fmt.Errorf("schema change (%s): %w", ev, err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("schema change (%s): %w", ev, err)
	}
	return out, nil
}

// FieldIDs returns the field id of each column of the table's schema, by
// name: the ids the connector's data files must carry.
func (t *Table) FieldIDs() map[string]int {
	fields := t.tbl.Schema().Fields()
	ids := make(map[string]int, len(fields))
	for _, f := range fields {
		ids[f.Name] = f.ID
	}
	return ids
}

// Evolved is what Open changed in the table's schema; empty when nothing.
func (t *Table) Evolved() Evolution { return t.evolved }

// partitioningTOML writes partition fields as [iceberg] partitioning takes
// them: a TOML array in Trino's syntax, identity(c) written c.
func partitioningTOML(fields []string) string {
	q := make([]string, len(fields))
	for i, f := range fields {
		if c, ok := strings.CutPrefix(f, "identity("); ok {
			f = strings.TrimSuffix(c, ")")
		}
		q[i] = strconv.Quote(f)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
