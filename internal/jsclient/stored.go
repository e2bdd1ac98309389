package jsclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
)

// StoredMsg is a message as the stream stores it.
type StoredMsg struct {
	Seq     uint64
	Subject string
	Header  nats.Header
	Data    []byte
	Time    time.Time
}

// errNotFound is what getStored returns when the stream holds no message
// the request asks for.
var errNotFound = errors.New("no such message")

// getStored asks the stream's leader for one stored message (the
// STREAM.MSG.GET request req: seq, next_by_subj or last_by_subj), never a
// direct-get replica or mirror, which may lag.
func getStored(ctx context.Context, nc *nats.Conn, n config.NATS, stream string, req any) (*StoredMsg, error) {
	if nc == nil {
		return nil, errors.New("not connected")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	msg, err := nc.RequestWithContext(gctx, APIPrefix(n)+"STREAM.MSG.GET."+stream, body)
	cancel()
	if err != nil {
		return nil, err
	}
	var resp struct {
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Header  []byte    `json:"hdrs"`
			Data    []byte    `json:"data"`
			Time    time.Time `json:"time"`
		} `json:"message"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, err
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound):
		return nil, errNotFound
	case resp.Error != nil:
		return nil, fmt.Errorf("%s (%d)", resp.Error.Description, resp.Error.ErrCode)
	case resp.Message == nil:
		return nil, fmt.Errorf("unexpected response %.200s", msg.Data)
	}
	m := resp.Message
	out := &StoredMsg{Seq: m.Seq, Subject: m.Subject, Data: m.Data, Time: m.Time}
	if len(m.Header) > 0 {
		if out.Header, err = nats.DecodeHeadersMsg(m.Header); err != nil {
			return nil, fmt.Errorf("sequence %d: headers: %w", m.Seq, err)
		}
	}
	return out, nil
}

// SampleMessages returns, for each filter (the whole stream when there is
// none), the oldest and the newest message the stream holds on it, each
// once, in sequence order: what plan renders sample keys from when paths
// depend on the messages' content.
func SampleMessages(ctx context.Context, nc *nats.Conn, n config.NATS, stream string, filters []string) ([]*StoredMsg, error) {
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var out []*StoredMsg
	seen := map[uint64]bool{}
	for _, f := range filters {
		reqs := []any{
			struct {
				Seq  uint64 `json:"seq"`
				Next string `json:"next_by_subj"`
			}{1, f},
			struct {
				Last string `json:"last_by_subj"`
			}{f},
		}
		for _, req := range reqs {
			m, err := getStored(ctx, nc, n, stream, req)
			if errors.Is(err, errNotFound) {
				continue
			}
			if err != nil {
				return out, fmt.Errorf("stream %s: sample of %s: %w", stream, f, err)
			}
			if !seen[m.Seq] {
				seen[m.Seq] = true
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b *StoredMsg) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}
