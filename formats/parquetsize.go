package formats

import "encoding/binary"

// learning is what the encoder has learned from finished files.
type learning struct {
	// actual is, per column, the bytes of the column chunks of the last
	// files over their values' plain size, used until a batch samples the
	// column; 0 until known.
	actual []float64
	// factor is, per column, the ratio of the column chunks' size to the
	// size that the batch's last sample predicted; 0 until known.
	factor []float64
	// perRowGroup is the bytes outside column chunks (header, footer, page
	// index) per row group; 0 until known.
	perRowGroup float64
}

// colOverhead is about what a batch holds per column besides the values
// (slice headers, sampling and estimating state; measured: 200 bytes).
const colOverhead = 200

// firstProbe is the raw size at which a batch first samples its columns;
// each later sample waits for probeGrowth times more.
const (
	firstProbe  = 64 << 10
	probeGrowth = 8
	maxProbe    = 256 << 10 // bytes of a column a sample compresses
)

// measure sets size and mem from the batch's content, sampling the columns
// when their size calls for it.
func (b *parquetBatch) measure() {
	e := b.e
	if b.fresh && b.n > 0 {
		b.fresh = false
		e.mu.Lock()
		for i := range b.ratios {
			b.ratios[i] = e.learn.actual[i]
			if b.ratios[i] == 0 {
				b.ratios[i] = priorRatio(e.opts.Compression)
			}
		}
		b.perRowGroup = e.learn.perRowGroup
		e.mu.Unlock()
		if b.perRowGroup == 0 {
			// Chunk metadata with statistics and the page index: about
			// 200 bytes per column.
			b.perRowGroup = 200 * float64(len(b.cols))
		}
	}
	var raw int64
	for i := range b.cols {
		raw += b.cols[i].rawSize(b.n)
	}
	if raw >= b.nextProbe && b.n > 0 {
		b.calibrate(raw)
	}
	est := b.overhead(raw)
	mem := b.out.mem
	if b.n > 0 {
		mem += colOverhead * len(b.cols)
	}
	for i := range b.cols {
		c := &b.cols[i]
		est += float64(c.rawSize(b.n)) * b.ratios[i]
		mem += c.mem()
	}
	b.size, b.mem = int(est+0.5), mem
}

// overhead estimates the bytes of the file outside its column chunks: the
// file without rows, and the metadata of each row group.
func (b *parquetBatch) overhead(raw int64) float64 {
	e := b.e
	if b.n == 0 {
		return float64(e.emptySize)
	}
	groups := 1 + raw/e.opts.RowGroupSize
	return float64(e.emptySize) + b.perRowGroup*float64(groups)
}

// priorRatio is a guess of how well a codec compresses column values, for
// the start of the first batch, before the first sample.
func priorRatio(c Compression) float64 {
	switch c {
	case None:
		return 1
	case Snappy:
		return 0.5
	}
	return 0.3
}

// calibrate compresses a sample of every column, the last maxProbe bytes of
// their plain encoding, and estimates with the ratios found, adjusted by
// what the encoder learned about how samples compare with files.
func (b *parquetBatch) calibrate(raw int64) {
	e := b.e
	for b.nextProbe <= raw {
		b.nextProbe *= probeGrowth
	}
	for i := range b.cols {
		c := &b.cols[i]
		if c.dict {
			b.sample[i] = c.dictSample(b.n)
		} else {
			plain := c.appendSample(b.probe[:0], b.n)
			if len(plain) < 64 {
				continue
			}
			packed, err := e.codec.Encode(b.str[:0], plain)
			b.probe, b.str = plain, packed
			if err != nil {
				continue
			}
			b.sample[i] = float64(len(packed)) / float64(len(plain))
		}
		e.mu.Lock()
		f := e.learn.factor[i]
		e.mu.Unlock()
		if f == 0 {
			f = 1
		}
		b.ratios[i] = b.sample[i] * f
	}
}

// dictSample estimates the ratio of the dictionary encoding of the column's
// last values, up to maxProbe bytes, to their PLAIN encoding: each distinct
// value once, and an index of as many bits as the distinct values need for
// each row. (The indexes are run-length encoded: a column of one value
// costs next to nothing.)
func (c *colData) dictSample(n int) float64 {
	distinct := make(map[string]struct{})
	var plain, dict int
	i := n
	for ; i > 0 && plain < maxProbe; i-- {
		v := c.bytesAt(i - 1)
		plain += 4 + len(v)
		if _, ok := distinct[string(v)]; !ok {
			distinct[string(v)] = struct{}{}
			dict += 4 + len(v)
		}
	}
	bits := 0
	for 1<<bits < len(distinct) {
		bits++
	}
	return float64(dict+(n-i)*bits/8) / float64(plain)
}

// appendSample appends the PLAIN encoding of the column's last values, up
// to maxProbe bytes, to dst.
func (c *colData) appendSample(dst []byte, n int) []byte {
	if c.kind == kindBytes {
		i := n
		for size := 0; i > 0 && size < maxProbe; {
			i--
			size += 4 + len(c.bytesAt(i))
		}
		for ; i < n; i++ {
			if c.optional && c.null[i] {
				continue
			}
			v := c.bytesAt(i)
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
			dst = append(dst, v...)
		}
		return dst
	}
	for i := max(0, n-int(maxProbe/c.kind.width())); i < n; i++ {
		if c.optional && c.null[i] {
			continue
		}
		v := c.vals[i]
		switch c.kind {
		case kindInt64, kindDouble:
			dst = binary.LittleEndian.AppendUint64(dst, v)
		case kindInt32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		default:
			dst = append(dst, byte(v))
		}
	}
	return dst
}

// learnFrom updates what the encoder knows from the file of b, whose
// column chunks have the given sizes. Only columns with enough data to
// say something teach it.
func (e *parquetEncoder) learnFrom(b *parquetBatch, chunks []int64) {
	const minRaw = 16 << 10
	var total, raw int64
	for ci := range b.cols {
		total += chunks[ci]
		raw += b.cols[ci].rawSize(b.n)
	}
	groups := 1 + raw/e.opts.RowGroupSize
	e.mu.Lock()
	defer e.mu.Unlock()
	for ci := range b.cols {
		r := b.cols[ci].rawSize(b.n)
		if r < minRaw {
			continue
		}
		actual := float64(chunks[ci]) / float64(r)
		e.learn.actual[ci] = blend(e.learn.actual[ci], actual)
		if s := b.sample[ci]; s > 0 {
			e.learn.factor[ci] = blend(e.learn.factor[ci], actual/s)
		}
	}
	if b.n > 0 {
		e.learn.perRowGroup = blend(e.learn.perRowGroup, float64(b.out.len()-int64(e.emptySize)-total)/float64(groups))
	}
}

// blend folds x into a running average that was old (0: none yet).
func blend(old, x float64) float64 {
	if old == 0 {
		return x
	}
	return (old + x) / 2
}
