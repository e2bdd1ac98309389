package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
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
		conn := ci.Config.Metadata[exporter.MetaConsumerConnector]
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
		p.add(statusWarn, "stream %s: could not list its consumers to compare filters: %v", s.Stream, err)
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
			p.add(statusWarn, "stream %s: filter %s of consumer %s overlaps filter %s of consumer %s (connector %s): messages matching both are exported twice; make the filters disjoint",
				s.Stream, a, s.Consumer, b, o.consumer, o.connector)
		}
	}
	subjects, err := allSubjects(ctx, nc, p.c.NATS, s.Stream)
	if err != nil {
		p.add(statusWarn, "stream %s: could not list its subjects to check coverage: %v", s.Stream, err)
		return
	}
	var uncovered []string
	for _, subj := range subjects {
		covered := false
		for _, f := range filters {
			if len(f) == 0 || slices.ContainsFunc(f, func(filter string) bool { return subjectMatches(filter, subj) }) {
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
		p.add(statusWarn, "stream %s: %d subjects with messages match no jetlake consumer's filter (%s): they are not exported",
			s.Stream, len(uncovered), strings.Join(shownSubjects, ", "))
	case !overlapping:
		p.add(statusOK, "stream %s: %d jetlake consumers; their filters are disjoint and cover every subject with messages", s.Stream, len(filters))
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
			if filtersOverlap(strings.Split(x, "."), strings.Split(y, ".")) {
				return x, y, true
			}
		}
	}
	return "", "", false
}

func filtersOverlap(a, b []string) bool {
	for i := 0; ; i++ {
		if i == len(a) || i == len(b) {
			return len(a) == len(b)
		}
		if a[i] == ">" || b[i] == ">" {
			return true
		}
		if a[i] != "*" && b[i] != "*" && a[i] != b[i] {
			return false
		}
	}
}

// subjectMatches reports whether a concrete subject matches a filter.
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i := range f {
		switch {
		case f[i] == ">":
			return i < len(s)
		case i >= len(s):
			return false
		case f[i] != "*" && f[i] != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}

// allSubjects returns the subjects of the stream that hold messages, as one
// page of stream info gives them.
func allSubjects(ctx context.Context, nc *nats.Conn, n config.NATS, stream string) ([]string, error) {
	req, err := json.Marshal(map[string]string{"subjects_filter": ">"})
	if err != nil {
		return nil, err
	}
	msg, err := nc.RequestWithContext(ctx, apiPrefix(n)+"STREAM.INFO."+stream, req)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
		State struct {
			Subjects map[string]uint64 `json:"subjects"`
		} `json:"state"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("%s", resp.Error.Description)
	}
	out := make([]string, 0, len(resp.State.Subjects))
	for subj := range resp.State.Subjects {
		out = append(out, subj)
	}
	slices.Sort(out)
	return out, nil
}
