package formats

// cellReader reads the typed columns' values out of compacted JSON
// payloads: the parquet encoder for its columns, the Extractor for paths
// and event time. It is not safe for concurrent use.
type cellReader struct {
	typed      []typedColumn
	firstNames []string // the first step of each typed column's path
	policy     TypeErrorPolicy
	cells      []cell
	firsts     [][]byte // the values of the first steps of the paths
	str, key   []byte   // scratch for strings and member names
	arena      []byte   // the bytes of the cells' values
}

// newCellReader returns a cellReader of typed columns.
func newCellReader(typed []typedColumn, policy TypeErrorPolicy) cellReader {
	r := cellReader{
		typed:  typed,
		policy: policy,
		cells:  make([]cell, len(typed)),
		firsts: make([][]byte, len(typed)),
	}
	for _, c := range typed {
		r.firstNames = append(r.firstNames, c.path[0].name)
	}
	return r
}

// read fills r.cells with the typed columns' values from compact, a
// payload appendCompactJSON compacted when isJSON, and returns them. Bytes
// of a value are kept in r.arena, valid until the next read. It returns a
// *TypeError for a value a column rejects when the policy says so;
// otherwise such a value is null.
func (r *cellReader) read(compact []byte, isJSON bool) ([]cell, error) {
	r.arena = r.arena[:0]
	if isJSON && len(r.typed) > 0 && compact[0] == '{' {
		// One scan of the payload finds the first step of every path.
		r.key = members(compact, r.firstNames, r.firsts, r.key)
	}
	for i := range r.typed {
		c := &r.typed[i]
		x := cell{null: true}
		if isJSON {
			var v []byte
			var found bool
			if compact[0] == '{' {
				if first := r.firsts[i]; first != nil {
					v, r.key, found = lookup(first, c.path[1:], r.key)
				}
			} else {
				v, r.key, found = lookup(compact, c.path, r.key)
			}
			if found {
				var reason string
				x, r.str, reason = c.convert(v, r.str)
				if reason != "" {
					if r.policy == RejectTypeErrors {
						return nil, &TypeError{Column: c.Name, Source: c.Source, Value: truncateValue(v), Reason: reason}
					}
					x = cell{null: true}
				}
				if x.b != nil {
					// x.b points into scratch space that the next column
					// reuses; keep it in the arena.
					start := len(r.arena)
					r.arena = append(r.arena, x.b...)
					x.b = r.arena[start:len(r.arena):len(r.arena)]
				}
			}
		}
		r.cells[i] = x
	}
	return r.cells, nil
}
