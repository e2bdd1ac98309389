package progress

// Held is the set of stream sequences a runner holds: delivered, not yet
// acked. They lie close together, so a bitmap in pages of 64Ki sequences is
// smaller and faster than a map: adding, finding and removing one is a page
// lookup among a few and a bit operation.
type Held struct {
	pages map[uint64]*heldPage // by seq / pageSeqs
	n     int
	spare *heldPage // an emptied page, kept so that steady state does not allocate
}

const pageSeqs = 1 << 16

type heldPage struct {
	bits [pageSeqs / 64]uint64
	n    int
}

func (h *Held) page(seq uint64) *heldPage { return h.pages[seq/pageSeqs] }

// Has reports whether seq is in the set.
func (h *Held) Has(seq uint64) bool {
	p := h.page(seq)
	return p != nil && p.bits[seq%pageSeqs/64]&(1<<(seq%64)) != 0
}

// Add adds seq to the set.
func (h *Held) Add(seq uint64) {
	p := h.page(seq)
	if p == nil {
		if h.pages == nil {
			h.pages = map[uint64]*heldPage{}
		}
		p, h.spare = h.spare, nil
		if p == nil {
			p = new(heldPage)
		}
		h.pages[seq/pageSeqs] = p
	}
	w, bit := &p.bits[seq%pageSeqs/64], uint64(1)<<(seq%64)
	if *w&bit == 0 {
		*w |= bit
		p.n++
		h.n++
	}
}

// Remove removes seq from the set.
func (h *Held) Remove(seq uint64) {
	p := h.page(seq)
	if p == nil {
		return
	}
	w, bit := &p.bits[seq%pageSeqs/64], uint64(1)<<(seq%64)
	if *w&bit == 0 {
		return
	}
	*w &^= bit
	p.n--
	h.n--
	if p.n == 0 {
		delete(h.pages, seq/pageSeqs)
		h.spare = p // all zero again
	}
}

// Len is the number of sequences in the set.
func (h *Held) Len() int { return h.n }
