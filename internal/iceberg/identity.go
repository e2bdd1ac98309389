package iceberg

// UUID is the table's own identity, made when the table was created: a
// table dropped and made anew at the same location, or created in another
// catalog, has another.
func (t *Table) UUID() string { return t.tbl.Metadata().TableUUID().String() }

// CheckLocation returns a *MismatchError when the table does not live at
// location, where the connector writes its data files.
func (t *Table) CheckLocation(location string) error {
	return checkLocation(t.tbl.Location(), location)
}
