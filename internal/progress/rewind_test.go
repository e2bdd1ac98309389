package progress

import "testing"

// A batch this instance stored and whose acks the server confirmed stays
// exported when recovery starts the Ledger again from an export record
// that does not hold it yet (a takeover right after the upload): the
// Ledger must not take its sequences for holes, or the consumer is moved
// back over them. And when the consumer is moved back (Rewound), its
// messages come again as first deliveries: they are stored, not new.
func TestBookKeepsConfirmedBatchesAcrossARestartAndARewind(t *testing.T) {
	encoded, err := NewSeqs([]uint64{2004, 2010, 2016}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b := started()
	for _, seq := range []uint64{2004, 2010, 2016} {
		b.Deliver(seq, 0, false)
	}
	b.Seal("i", 3)
	for _, seq := range []uint64{2004, 2010, 2016} {
		b.Release(seq)
	}
	b.BatchDone("i", 3, Outcome{Stored: true, Confirmed: true, Intent: "i", First: 2004, Last: 2016, Encoded: encoded})

	// Recovery: the record's floor is 2003, the batch is not in it.
	b.Stop()
	b.Start(2003, nil, 1, 3000, false, false) // the consumer delivered up to 3000
	for _, seq := range []uint64{2004, 2010, 2016} {
		if b.Ledger().IsHole(seq) {
			t.Errorf("sequence %d of a stored batch is a hole after the Ledger started again", seq)
		}
	}

	// The consumer is moved back: the batch's messages come again,
	// delivered for the first time to the new cursor.
	b.Rewound()
	for _, seq := range []uint64{2004, 2010, 2016} {
		if got := b.Deliver(seq, 0, false); got != Stored {
			t.Errorf("sequence %d delivered again after a rewind is %v, want Stored", seq, got)
		}
	}
	if got := b.Deliver(2005, 0, false); got != New {
		t.Errorf("sequence 2005, in no batch, is %v, want New", got)
	}
}
