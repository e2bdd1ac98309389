package iceberg

import "strings"

// FileBook is what a writer knows of the data files on their way into its
// table: those stored and in no plan yet (pending, with the tails kept for
// their commit), the intents whose file a plan claims, the committed plans
// and how many of their intents are not yet deleted, and the intents whose
// deletion waits for their plan's commit. An intent is deleted only once
// its file's plan is in the table and the export record's floor has passed
// it. It is pure: no I/O; one goroutine uses it.
type FileBook struct {
	bucket     string
	dataPrefix string // object key prefix of the data files

	pending  []File           // stored, in no plan yet
	planOf   map[string]*Plan // intent key → the committed plan holding its file
	left     map[*Plan]int    // intents of a plan not yet deleted
	claimed  map[string]bool  // intents whose file is in a plan
	deferred map[string]bool  // intents the floor passed before their file's plan was committed
	tails    int              // bytes of the tails of pending files
}

// maxTails bounds the bytes of data file tails kept for the next commits:
// with them a commit reads no file back from the store.
const maxTails = 16 << 20

// NewFileBook returns an empty FileBook for a table whose data files are
// stored in bucket under dataPrefix.
func NewFileBook(bucket, dataPrefix string) *FileBook {
	return &FileBook{bucket: bucket, dataPrefix: dataPrefix,
		planOf: map[string]*Plan{}, left: map[*Plan]int{}, claimed: map[string]bool{}, deferred: map[string]bool{}}
}

// Location is the s3:// location of an object key.
func (b *FileBook) Location(key string) string { return "s3://" + b.bucket + "/" + key }

// Recovered records the plans an earlier process left, committed now: each
// intent of theirs is claimed. Intents that still exist are counted as
// recovery finds them (Found); a plan none of whose intents is left is
// Unclaimed, to forget once the streams are set up.
func (b *FileBook) Recovered(plans []*Plan) {
	for _, p := range plans {
		for _, f := range p.Files {
			b.claimed[f.Intent] = true
			b.planOf[f.Intent] = p
		}
		b.left[p] = 0
	}
}

// Found records an intent recovery found whose object, key, exists: in a
// plan already, or waiting for one. Intents of other objects (rejected
// messages, under _jetlake/) are none of the table's business.
func (b *FileBook) Found(ikey, key string, first, last uint64) {
	if !strings.HasPrefix(key, b.dataPrefix+"/") {
		return
	}
	if p, ok := b.planOf[ikey]; ok {
		b.left[p]++
		return
	}
	if b.claimed[ikey] {
		return
	}
	b.Stored(ikey, key, first, last, nil)
}

// Stored records a data file stored under its intent: it goes into the
// next commit, with its tail while the tails kept stay within maxTails
// bytes.
func (b *FileBook) Stored(ikey, key string, first, last uint64, tail *Tail) {
	b.claimed[ikey] = true
	if tail != nil && b.tails+len(tail.Bytes) <= maxTails {
		b.tails += len(tail.Bytes)
	} else {
		tail = nil
	}
	b.pending = append(b.pending, File{Location: b.Location(key), Intent: ikey, First: first, Last: last, Tail: tail})
}

// Pending is how many stored files wait for a plan.
func (b *FileBook) Pending() int { return len(b.pending) }

// Take takes the pending files one plan holds: as many of the first as fit
// says.
func (b *FileBook) Take(fit func([]File) int) []File {
	n := fit(b.pending)
	files := b.pending[:n:n]
	b.pending = b.pending[n:]
	if len(b.pending) == 0 {
		b.pending = nil
	}
	return files
}

// Return puts back, first, the files of a commit that failed before its
// plan was recorded.
func (b *FileBook) Return(files []File) { b.pending = append(files, b.pending...) }

// DropTails lets go of the tails of files committed.
func (b *FileBook) DropTails(files []File) {
	for i := range files {
		if t := files[i].Tail; t != nil {
			b.tails -= len(t.Bytes)
			files[i].Tail = nil
		}
	}
}

// Forgettable splits intents the export record's floor has passed into
// those whose file is in the table (or that are none of the table's), to
// delete now, and the others, deleted once their plan is committed.
func (b *FileBook) Forgettable(keys []string) []string {
	out := keys[:0]
	for _, k := range keys {
		if _, ok := b.planOf[k]; ok || !b.claimed[k] {
			out = append(out, k)
			continue
		}
		b.deferred[k] = true
	}
	return out
}

// Forgotten records deleted intents, and returns the plans none of whose
// intents is left: they can go.
func (b *FileBook) Forgotten(keys []string) []*Plan {
	var done []*Plan
	for _, k := range keys {
		p, ok := b.planOf[k]
		if !ok {
			continue
		}
		delete(b.planOf, k)
		delete(b.claimed, k)
		if b.left[p]--; b.left[p] <= 0 {
			delete(b.left, p)
			done = append(done, p)
		}
	}
	return done
}

// Committed records a commit of p, handed files, that landed: its plan's
// intents may go once the floor passes them; it returns those it passed
// already, to delete now. Files another plan claimed are that plan's
// business.
func (b *FileBook) Committed(p *Plan, files []File) (forget []string) {
	in := map[string]bool{}
	for _, f := range p.Files {
		in[f.Intent] = true
		b.planOf[f.Intent] = p
		b.left[p]++
	}
	for _, f := range files {
		if !in[f.Intent] {
			delete(b.claimed, f.Intent)
		}
		if b.deferred[f.Intent] {
			delete(b.deferred, f.Intent)
			forget = append(forget, f.Intent)
		}
	}
	return forget
}

// Unclaimed returns the recovered plans none of whose intents recovery
// found: their files are in the table, and the plans can go (DropPlan).
func (b *FileBook) Unclaimed() []*Plan {
	var out []*Plan
	for p, n := range b.left {
		if n == 0 {
			out = append(out, p)
		}
	}
	return out
}

// DropPlan forgets a plan that is gone.
func (b *FileBook) DropPlan(p *Plan) { delete(b.left, p) }
