package state_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
)

func rs(pairs ...uint64) []progress.Range {
	var out []progress.Range
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, progress.Range{First: pairs[i], Last: pairs[i+1]})
	}
	return out
}

func TestUnconfirmedIsWhatTheRecordClaimsAndNeitherTheAckFloorNorTheLakeShow(t *testing.T) {
	tests := []struct {
		name string
		rec  state.Record
		base uint64
		lake []progress.Range
		want []progress.Range
	}{
		{"a forged floor over an empty lake", state.Record{Floor: 10}, 0, nil, rs(1, 10)},
		{"a forged floor over part of the lake", state.Record{Floor: 10}, 0, rs(1, 5), rs(6, 10)},
		{"a forged floor over a hole of the lake", state.Record{Floor: 10}, 0, rs(1, 3, 8, 12), rs(4, 7)},
		{"the ack floor confirms it", state.Record{Floor: 10}, 10, nil, nil},
		{"the lake confirms it, markers and rejected objects among it", state.Record{Floor: 10, Done: progress.SeqsOf(rs(14, 20))}, 2, rs(3, 12, 14, 20), nil},
		{"below the lake's lowest sequence was never in scope", state.Record{Floor: 1000}, 1000, rs(1001, 1200), nil},
		{"done ranges the lake lacks", state.Record{Floor: 10, Done: progress.SeqsOf(rs(14, 20))}, 0, rs(1, 10, 14, 15), rs(16, 20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := state.Unconfirmed(&tt.rec, tt.base, tt.lake); !slices.Equal(got, tt.want) {
				t.Errorf("Unconfirmed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRebuiltRecordHoldsWhatTheLakeAndTheAckFloorShow(t *testing.T) {
	created := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		base      uint64
		lake      []progress.Range
		keep      *state.Record
		cut       uint64
		wantFloor uint64
		wantDone  []progress.Range
	}{
		{"nothing shown", 0, nil, nil, 0, 0, nil},
		{"the lake from the first sequence", 0, rs(1, 10), nil, 0, 10, nil},
		{"a hole the stream may still hold", 0, rs(1, 10, 13, 20), nil, 0, 10, rs(13, 20)},
		{"a base below the lake's first", 100, rs(501, 600), nil, 0, 100, rs(501, 600)},
		{"a base past the lake", 700, rs(501, 600), nil, 0, 700, nil},
		{"a filtered record kept up to the cut", 0, rs(1, 2, 5, 6), &state.Record{Floor: 30}, 6, 6, nil},
		{"a filtered record's done ranges kept up to the cut", 0, rs(1, 2, 9, 9), &state.Record{Floor: 2, Done: progress.SeqsOf(rs(4, 5, 8, 12))}, 9, 2, rs(4, 5, 8, 9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := state.Rebuilt(created, tt.base, tt.lake, tt.keep, tt.cut, created)
			if got.Floor != tt.wantFloor || !slices.Equal(got.Done.Ranges(), tt.wantDone) || !got.StreamCreated.Equal(created) {
				t.Errorf("Rebuilt = floor %d done %v, want floor %d done %v", got.Floor, got.Done.Ranges(), tt.wantFloor, tt.wantDone)
			}
		})
	}
}

func TestBaseIsTheAckFloorOrWithoutAConsumerBelowTheLake(t *testing.T) {
	tests := []struct {
		name     string
		ackFloor uint64
		found    bool
		lake     []progress.Range
		want     uint64
	}{
		{"a consumer holding what is below the lake unacked: its ack floor", 100, true, rs(501, 600), 100},
		{"a consumer whose ack floor passed the lake's first: the lake decides", 700, true, rs(501, 600), 500},
		{"a consumer, no lake: its ack floor", 100, true, nil, 100},
		{"no consumer: below the lake's first", 0, false, rs(501, 600), 500},
		{"no consumer, no lake", 0, false, nil, 0},
	}
	for _, tt := range tests {
		if got := state.Base(tt.ackFloor, tt.found, tt.lake); got != tt.want {
			t.Errorf("%s: Base = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestUnsafeStateBucketsAreNamedWithTheFix(t *testing.T) {
	tests := []struct {
		name string
		cfg  jetstream.StreamConfig
		want string // in the reason; "" for a safe bucket
	}{
		{"file, no limits", jetstream.StreamConfig{Storage: jetstream.FileStorage, Discard: jetstream.DiscardNew}, ""},
		{"memory", jetstream.StreamConfig{Storage: jetstream.MemoryStorage}, "in memory"},
		{"a TTL", jetstream.StreamConfig{MaxAge: time.Hour}, "expire after 1h0m0s"},
		{"discard old when full", jetstream.StreamConfig{MaxBytes: 1 << 20, Discard: jetstream.DiscardOld}, "oldest entries"},
		{"limits that refuse writes", jetstream.StreamConfig{MaxBytes: 1 << 20, MaxMsgs: 100, Discard: jetstream.DiscardNew}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := state.Unsafe("jetlake", tt.cfg)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("Unsafe = %q, want %q in it", got, tt.want)
			}
			if tt.want != "" && !strings.Contains(got, "nats kv del jetlake") {
				t.Errorf("Unsafe = %q: no fix named", got)
			}
		})
	}
}
