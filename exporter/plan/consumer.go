package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
)

// checkConsumer compares an existing consumer with what jetlake run needs
// (jsclient.CheckConsumer): what run refuses fails the plan; what run sets
// on start is a warning when it works against the connector's limits until
// then, a note otherwise.
func (p *planner) checkConsumer(ctx context.Context, st jetstream.Stream, key string, s config.Stream) {
	name := fmt.Sprintf("stream %s, consumer %s", s.Stream, s.Consumer)
	mode := jsclient.ModeFor(st.CachedInfo().Config.Retention)
	p.add(OK, "%s: read %s: %s", name, mode, mode.Why)
	octx, cancel := p.op(ctx)
	cons, err := st.Consumer(octx, s.Consumer)
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		p.add(OK, "%s: does not exist yet; jetlake creates it on start: %s, MaxDeliver -1, deliver %s%s",
			name, ackText(mode, s.AckWait, s.MaxAckPending), s.DeliverPolicy, filterText(s.Subjects))
		return
	case errors.Is(err, jetstream.ErrNotPullConsumer):
		p.add(Fail, "%s: a push consumer (it has a deliver subject); jetlake reads with a pull consumer: delete the consumer (jetlake re-creates it) or set %s.consumer to another name", name, key)
		return
	case err != nil:
		p.add(Fail, "%s: %v", name, p.why(octx, err))
		return
	}
	info := cons.CachedInfo()
	have := info.Config
	problems := jsclient.CheckConsumer(p.c, s, key, have, mode)
	for _, pr := range problems {
		status := Note
		switch {
		case pr.Refused:
			status = Fail
		case pr.Harmful:
			status = Warn
		}
		p.add(status, "%s: %s", name, pr.Msg)
	}
	if info.Paused {
		until := "further notice"
		if have.PauseUntil != nil {
			until = have.PauseUntil.UTC().Format(time.RFC3339)
		}
		p.add(Warn, "%s: paused until %s: nothing is delivered until it resumes", name, until)
	}
	if len(problems) == 0 {
		p.add(OK, "%s: exists and fits: %s, MaxDeliver %d; %d pending, %d unacked",
			name, ackText(mode, have.AckWait, have.MaxAckPending), have.MaxDeliver, info.NumPending, info.NumAckPending)
	}
}

// ackText says how a consumer read in mode takes acks.
func ackText(mode jsclient.ReadMode, ackWait time.Duration, maxAckPending int) string {
	if mode.AckLess {
		return "AckNone"
	}
	return fmt.Sprintf("AckExplicit, AckWait %s, MaxAckPending %d", config.FormatDuration(ackWait), maxAckPending)
}

func filterText(subjects []string) string {
	if len(subjects) == 0 {
		return ", the whole stream"
	}
	return ", filters " + strings.Join(subjects, ", ")
}
