package formats

// colKind is how a column's values are buffered.
type colKind uint8

const (
	kindBytes colKind = iota
	kindInt64
	kindInt32
	kindDouble
	kindBool
)

// width is the size of a value in PLAIN encoding: bytes columns add a
// 4-byte length to each value. A boolean counts one byte here and one bit
// in rawSize.
func (k colKind) width() int64 {
	switch k {
	case kindBytes, kindInt32:
		return 4
	case kindInt64, kindDouble:
		return 8
	}
	return 1
}

// colData holds the values of one column of a batch.
type colData struct {
	kind     colKind
	optional bool
	dict     bool
	data     []byte   // kindBytes: the values, concatenated
	ends     []int    // kindBytes: where each row's value ends in data
	vals     []uint64 // other kinds: each row's value; float64 bits for doubles
	null     []bool   // optional columns: whether each row's value is null
	raw      int64    // PLAIN-encoded size of the values, without levels
}

func (c *colData) reset() {
	c.data, c.ends, c.vals, c.null, c.raw = c.data[:0], c.ends[:0], c.vals[:0], c.null[:0], 0
}

func (c *colData) addBytes(v []byte) {
	c.data = append(c.data, v...)
	c.ends = append(c.ends, len(c.data))
	if c.optional {
		c.null = append(c.null, false)
	}
	c.raw += 4 + int64(len(v))
}

func (c *colData) addString(s string) {
	c.data = append(c.data, s...)
	c.ends = append(c.ends, len(c.data))
	if c.optional {
		c.null = append(c.null, false)
	}
	c.raw += 4 + int64(len(s))
}

func (c *colData) addValue(v uint64) {
	c.vals = append(c.vals, v)
	if c.optional {
		c.null = append(c.null, false)
	}
	c.raw += c.kind.width()
}

func (c *colData) addNull() {
	if c.kind == kindBytes {
		c.ends = append(c.ends, len(c.data))
	} else {
		c.vals = append(c.vals, 0)
	}
	c.null = append(c.null, true)
}

// dropLast removes row n-1 of the column.
func (c *colData) dropLast(n int) {
	isNull := c.optional && c.null[n-1]
	if c.optional {
		c.null = c.null[:n-1]
	}
	if c.kind != kindBytes {
		c.vals = c.vals[:n-1]
		if !isNull {
			c.raw -= c.kind.width()
		}
		return
	}
	start := 0
	if n > 1 {
		start = c.ends[n-2]
	}
	if !isNull {
		c.raw -= 4 + int64(c.ends[n-1]-start)
	}
	c.data = c.data[:start]
	c.ends = c.ends[:n-1]
}

// bytesAt returns row i's value of a kindBytes column.
func (c *colData) bytesAt(i int) []byte {
	start := 0
	if i > 0 {
		start = c.ends[i-1]
	}
	return c.data[start:c.ends[i]:c.ends[i]]
}

// rawSize is the PLAIN-encoded size of the column's values and definition
// levels (one bit per row, about, once run-length encoded).
func (c *colData) rawSize(n int) int64 {
	raw := c.raw
	if c.kind == kindBool {
		raw /= 8
	}
	if c.optional {
		raw += int64(n) / 8
	}
	return raw
}

// rowRaw is row i's share of rawSize, for cutting row groups.
func (c *colData) rowRaw(i int) int64 {
	if c.optional && c.null[i] {
		return 0
	}
	if c.kind == kindBytes {
		return 4 + int64(len(c.bytesAt(i)))
	}
	return c.kind.width()
}

// mem is the memory the column's values take. It counts lengths, not
// capacities: a batch keeps its slices through Reset for its next file,
// and the budget is about what the files being filled hold.
func (c *colData) mem() int {
	return len(c.data) + 8*len(c.ends) + 8*len(c.vals) + len(c.null)
}
