package plan

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
)

// checkCoverage compares the connector's filters with the other jetlake
// consumers on the stream (those whose metadata names a connector): filters
// that overlap would export a message twice, and subjects that no jetlake
// consumer matches are not exported at all.
func (p *planner) checkCoverage(ctx context.Context, nc *nats.Conn, st jetstream.Stream, s config.Stream) {
	type owner struct{ consumer, connector string }
	filters := map[owner][]string{{s.Consumer, p.c.Name}: s.Subjects}
	octx, cancel := p.op(ctx)
	defer cancel()
	lister := st.ListConsumers(octx)
	for ci := range lister.Info() {
		conn := ci.Config.Metadata[jsclient.MetaConsumerConnector]
		if conn == "" || ci.Name == s.Consumer {
			continue
		}
		f := ci.Config.FilterSubjects
		if ci.Config.FilterSubject != "" {
			f = []string{ci.Config.FilterSubject}
		}
		filters[owner{ci.Name, conn}] = f
	}
	if err := lister.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		p.add(Warn, "stream %s: could not list its consumers to compare filters: %v", s.Stream, p.why(octx, err))
		return
	}
	if len(filters) == 1 {
		return // one jetlake consumer: nothing to split
	}
	mine := filters[owner{s.Consumer, p.c.Name}]
	var others []owner
	for o := range filters {
		if o.consumer != s.Consumer {
			others = append(others, o)
		}
	}
	slices.SortFunc(others, func(a, b owner) int { return strings.Compare(a.consumer, b.consumer) })
	overlapping := false
	for _, o := range others {
		if a, b, ok := overlap(mine, filters[o]); ok {
			overlapping = true
			p.add(Warn, "stream %s: filter %s of consumer %s overlaps filter %s of consumer %s (connector %s): messages matching both are exported twice; make the filters disjoint",
				s.Stream, a, s.Consumer, b, o.consumer, o.connector)
		}
	}
	sctx, scancel := p.op(ctx)
	subjects, _, err := jsclient.StreamSubjects(sctx, nc, p.c.NATS, s.Stream, ">", 0)
	scancel()
	if err != nil {
		p.add(Warn, "stream %s: could not list its subjects to check coverage: %v", s.Stream, p.why(sctx, err))
		return
	}
	var uncovered []string
	for _, subj := range subjects {
		covered := false
		for _, f := range filters {
			if len(f) == 0 || slices.ContainsFunc(f, func(filter string) bool { return config.SubjectMatches(filter, subj) }) {
				covered = true
				break
			}
		}
		if !covered {
			uncovered = append(uncovered, subj)
		}
	}
	switch {
	case len(uncovered) > 0:
		shownSubjects := uncovered[:min(len(uncovered), maxSampleSubjects)]
		p.add(Warn, "stream %s: %d subjects with messages match no jetlake consumer's filter (%s): they are not exported",
			s.Stream, len(uncovered), strings.Join(shownSubjects, ", "))
	case !overlapping:
		p.add(OK, "stream %s: %d jetlake consumers; their filters are disjoint and cover every subject with messages", s.Stream, len(filters))
	}
}

// overlap returns a filter of a and one of b that some subject matches
// both of; an empty list is the whole stream.
func overlap(a, b []string) (string, string, bool) {
	if len(a) == 0 {
		a = []string{">"}
	}
	if len(b) == 0 {
		b = []string{">"}
	}
	for _, x := range a {
		for _, y := range b {
			if config.SubjectsOverlap(x, y) {
				return x, y, true
			}
		}
	}
	return "", "", false
}
