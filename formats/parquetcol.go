package formats

import "slices"

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
//
// The values of a bytes column go into blocks from the chunk pools, which
// double in size up to maxChunk and are never reallocated: a batch of
// 100,000 rows does not copy its values each time a slice outgrows its
// capacity, nor touch fresh memory for every copy, and a reset hands the
// blocks back for the next batch. A value is never split between blocks.
type colData struct {
	kind     colKind
	optional bool
	dict     bool
	blocks   []*[]byte // kindBytes: the values, concatenated within each block
	starts   []int     // kindBytes: where each block starts in the concatenation of all values
	size     int       // kindBytes: the length of that concatenation
	held     int       // kindBytes: the capacity of the blocks
	ends     []int     // kindBytes: where each row's value ends in the concatenation
	vals     []uint64  // other kinds: each row's value; float64 bits for doubles
	null     []bool    // optional columns: whether each row's value is null
	raw      int64     // PLAIN-encoded size of the values, without levels
}

func (c *colData) reset() {
	for i, b := range c.blocks {
		putBuf(b)
		c.blocks[i] = nil
	}
	c.blocks, c.starts, c.size, c.held = c.blocks[:0], c.starts[:0], 0, 0
	c.ends, c.vals, c.null, c.raw = c.ends[:0], c.vals[:0], c.null[:0], 0
}

// room returns the block the next value of n bytes goes into, with room
// for it: the last block, or a new one twice its size (at least n).
func (c *colData) room(n int) *[]byte {
	k := len(c.blocks)
	if k > 0 {
		if b := c.blocks[k-1]; cap(*b)-len(*b) >= n {
			return b
		}
	}
	class := 0
	if k > 0 {
		class = min(classFor(cap(*c.blocks[k-1]))+1, numClasses-1)
	}
	class = max(class, classFor(n))
	b := getBuf(class, n)
	c.blocks = append(c.blocks, b)
	c.starts = append(c.starts, c.size)
	c.held += cap(*b)
	return b
}

func (c *colData) addBytes(v []byte) {
	if len(v) > 0 {
		b := c.room(len(v))
		*b = append(*b, v...)
		c.size += len(v)
	}
	c.ends = append(c.ends, c.size)
	if c.optional {
		c.null = append(c.null, false)
	}
	c.raw += 4 + int64(len(v))
}

func (c *colData) addString(s string) {
	if len(s) > 0 {
		b := c.room(len(s))
		*b = append(*b, s...)
		c.size += len(s)
	}
	c.ends = append(c.ends, c.size)
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
		c.ends = append(c.ends, c.size)
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
	if dropped := c.size - start; dropped > 0 {
		// The last value is at the end of the last block.
		b := c.blocks[len(c.blocks)-1]
		*b = (*b)[:len(*b)-dropped]
		c.size = start
	}
	c.ends = c.ends[:n-1]
}

// noBytes is the value of an empty bytes cell: empty, not nil.
var noBytes = []byte{}

// bytesAt returns row i's value of a kindBytes column.
func (c *colData) bytesAt(i int) []byte {
	start := 0
	if i > 0 {
		start = c.ends[i-1]
	}
	end := c.ends[i]
	if start == end {
		return noBytes
	}
	// The block that holds it is the last one starting at or before it.
	k, found := slices.BinarySearch(c.starts, start)
	if !found {
		k--
	} else {
		// Blocks a dropped value left empty start where the next does.
		for k+1 < len(c.starts) && c.starts[k+1] == start {
			k++
		}
	}
	off := start - c.starts[k]
	return (*c.blocks[k])[off : off+end-start : off+end-start]
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

// mem is the memory the column's values take: the blocks it holds, and the
// lengths of its other slices (a batch keeps those through Reset for its
// next file, and the budget is about what the files being filled hold).
func (c *colData) mem() int {
	return c.held + 8*len(c.ends) + 8*len(c.vals) + len(c.null)
}
