package jsclient

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
)

// APIPrefix is the JetStream API prefix the [nats] settings select:
// "$JS.API.", "$JS.<domain>.API." or the configured prefix, with a
// trailing dot.
func APIPrefix(n config.NATS) string {
	switch {
	case n.JetStreamDomain != "":
		return "$JS." + n.JetStreamDomain + ".API."
	case n.JetStreamAPIPrefix != "":
		return strings.TrimSuffix(n.JetStreamAPIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

// StreamSubjects returns subjects of stream that hold messages and match
// filter, sorted, and how many such subjects there are. It asks for the
// stream's info page by page (the server sends a bounded number of
// subjects per page) until it has at least limit subjects, or all of them
// when limit <= 0: a stream may hold millions of subjects, and a sample
// needs only the first page.
func StreamSubjects(ctx context.Context, nc *nats.Conn, n config.NATS, stream, filter string, limit int) ([]string, int, error) {
	subject := APIPrefix(n) + "STREAM.INFO." + stream
	seen := map[string]bool{}
	total := 0
	for {
		req, err := json.Marshal(struct {
			SubjectsFilter string `json:"subjects_filter"`
			Offset         int    `json:"offset,omitempty"`
		}{filter, len(seen)})
		if err != nil {
			return nil, 0, err
		}
		msg, err := nc.RequestWithContext(ctx, subject, req)
		if err != nil {
			return nil, 0, err
		}
		var resp struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
			Total int `json:"total"`
			State struct {
				Subjects map[string]uint64 `json:"subjects"`
			} `json:"state"`
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return nil, 0, err
		}
		if resp.Error != nil {
			return nil, 0, errors.New(resp.Error.Description)
		}
		for s := range resp.State.Subjects {
			seen[s] = true
		}
		total = max(resp.Total, len(seen))
		if len(resp.State.Subjects) == 0 || len(seen) >= total || limit > 0 && len(seen) >= limit {
			break
		}
	}
	subs := make([]string, 0, len(seen))
	for s := range seen {
		subs = append(subs, s)
	}
	slices.Sort(subs)
	return subs, total, nil
}
