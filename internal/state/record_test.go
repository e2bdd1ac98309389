package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
)

func TestMergeRecordsKeepsWhatEitherSaysIsExported(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a := state.Record{StreamCreated: created, Floor: 100, Done: progress.SeqsOf([]progress.Range{{First: 150, Last: 160}, {First: 300, Last: 300}})}
	b := state.Record{StreamCreated: created, Floor: 149, Done: progress.SeqsOf([]progress.Range{{First: 200, Last: 250}})}
	got := state.MergeRecords(a, b)
	if got.Floor != 160 {
		t.Errorf("floor %d, want 160", got.Floor)
	}
	want := []progress.Range{{First: 200, Last: 250}, {First: 300, Last: 300}}
	if !slices.Equal(got.Done.Ranges(), want) {
		t.Errorf("done %v, want %v", got.Done.Ranges(), want)
	}
	// The record round-trips through JSON.
	body, err := json.Marshal(&got)
	if err != nil {
		t.Fatal(err)
	}
	var back state.Record
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	if back.Floor != got.Floor || !slices.Equal(back.Done.Ranges(), want) || !back.StreamCreated.Equal(created) {
		t.Errorf("decoded %+v from %s", back, body)
	}
}

func TestAnUnreadableRecordIsReplaced(t *testing.T) {
	st := exportertest.NewMemKV()
	ctx := t.Context()
	if _, err := st.Update(ctx, "export.k", []byte("not json"), 0); err != nil {
		t.Fatal(err)
	}
	var bad *state.UnreadableRecordError
	if _, _, err := state.LoadRecord(ctx, st, "export.k"); !errors.As(err, &bad) {
		t.Fatalf("LoadRecord: %v, want an unreadable record", err)
	}
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	floor, _, err := state.SaveRecord(ctx, st, "export.k", state.Record{StreamCreated: created, Floor: 42}, lastSeqIs(100))
	if err != nil || floor != 42 {
		t.Fatalf("SaveRecord = %d, %v", floor, err)
	}
	rec, _, err := state.LoadRecord(ctx, st, "export.k")
	if err != nil || rec.Floor != 42 {
		t.Fatalf("LoadRecord = %+v, %v", rec, err)
	}
}

func lastSeqIs(q uint64) state.LastSeqFunc {
	return func(context.Context) (uint64, error) { return q, nil }
}

func TestASavedRecordDoesNotTakeAFloorPastTheStream(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name          string
		stored        state.Record
		wantFloor     uint64
		wantUntrusted bool
	}{
		{"forged floor", state.Record{StreamCreated: created, Floor: 1_000_000_000_000}, 42, true},
		{"forged done", state.Record{StreamCreated: created, Floor: 10, Done: progress.NewSeqs([]uint64{500})}, 42, true},
		{"another instance ahead", state.Record{StreamCreated: created, Floor: 90}, 90, false},
		{"behind", state.Record{StreamCreated: created, Floor: 7}, 42, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := exportertest.NewMemKV()
			ctx := t.Context()
			value, _ := json.Marshal(&tt.stored)
			if _, err := st.Update(ctx, "export.k", value, 0); err != nil {
				t.Fatal(err)
			}
			floor, untrusted, err := state.SaveRecord(ctx, st, "export.k", state.Record{StreamCreated: created, Floor: 42}, lastSeqIs(100))
			if err != nil || floor != tt.wantFloor || (untrusted != nil) != tt.wantUntrusted {
				t.Fatalf("SaveRecord = %d, %v, %v; want floor %d, untrusted %v", floor, untrusted, err, tt.wantFloor, tt.wantUntrusted)
			}
			rec, _, err := state.LoadRecord(ctx, st, "export.k")
			if err != nil || rec.Claims() != tt.wantFloor {
				t.Fatalf("stored record = %+v, %v; want it to claim %d", rec, err, tt.wantFloor)
			}
		})
	}
}

func TestARecordReadBackIsJudgedByItsStreamAndItsClaims(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rec := func(floor uint64, done ...uint64) *state.Record {
		return &state.Record{StreamCreated: created, Floor: floor, Done: progress.NewSeqs(done)}
	}
	for _, tt := range []struct {
		name    string
		rec     *state.Record
		created time.Time
		lastSeq uint64
		want    state.Belief
	}{
		{"no record", nil, created, 10, state.Absent},
		{"a record of this stream", rec(5, 8), created, 10, state.Believed},
		{"a floor at the last sequence", rec(10), created, 10, state.Believed},
		{"a floor past the last sequence", rec(11), created, 10, state.Forged},
		{"a done range past the last sequence", rec(5, 12), created, 10, state.Forged},
		{"a record of an earlier stream", rec(500), created.Add(time.Hour), 10, state.Earlier},
	} {
		if got := state.Judge(tt.rec, tt.created, tt.lastSeq); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

// A record is taken on the writer's loop and written beside it, while the
// loop goes on storing sequences in the ledger: the record must not share
// the ledger's ranges, or what is written is a set the ledger has since
// changed in place, out of order and unreadable.
func TestALedgerRecordStaysAsTakenWhileTheLedgerMoves(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	l := progress.NewLedger(0, nil, 1, 0, false)
	for q := uint64(3); q <= 21; q += 2 {
		l.Stored(progress.Range{First: q, Last: q})
	}
	rec := state.LedgerRecord(l, created, created)
	want := slices.Clone(rec.Done.Ranges())
	for q := uint64(4); q <= 20; q += 4 {
		l.Stored(progress.Range{First: q, Last: q})
	}
	if got := rec.Done.Ranges(); !slices.Equal(got, want) {
		t.Fatalf("the record's done ranges changed with the ledger: %v, taken as %v", got, want)
	}
	body, err := json.Marshal(&rec)
	if err != nil {
		t.Fatal(err)
	}
	var back state.Record
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatalf("the record written does not read back: %v", err)
	}
}
