// Package progress keeps account of a stream's sequences: what is
// exported, what is held, what is being marked lost, and what is not known
// yet. It is pure: no I/O, no goroutines, no clock.
//
// Every set of sequences is ranges of one type, Range: a batch of 10,000
// subjects, a purge of 300 million sequences and a partition's sparse
// sequences each cost what their ranges cost, never what their sequences
// do. Set is a mutable set of ranges, Seqs an immutable one with a compact
// encoding (intents, object metadata), Held the bitmap of the sequences a
// runner holds, Ledger the account of what one stream has exported, which
// the export record is written from, and Book the one account a runner
// keeps of a stream's sequences, its Ledger included: every event that
// changes a sequence's state is one call to it.
//
// A loss marker's ranges are lossmarker's own type, lossmarker.Range, the
// marker format's: the Ledger names the ranges a walk found lost in it
// (Walked), the Book takes a marker's runs in it (MarkerDone), and
// MarkerRanges turns them into Ranges. progress imports lossmarker, never
// the other way.
package progress
