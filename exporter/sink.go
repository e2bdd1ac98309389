package exporter

import (
	"context"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/pathtemplate"
)

// sink is where a run's data batches land: objects under the path
// template (objectSink), or the data files of the connector's Iceberg
// table (*lakeTable). New chooses the kind; every Run opens its own. The
// rest of the exporter asks the sink and never which kind it is.
// Rejected messages and loss markers are plain objects either way.
type sink interface {
	// appendDir appends the folder of a record to buf: v holds its
	// stream, subject and what content read of it (the event time among
	// it), ts is its JetStream time and vals are its typed columns.
	appendDir(buf []byte, v *pathtemplate.Values, seq uint64, ts time.Time, vals []formats.Value) []byte
	// appendGroup appends to grp what, besides its stream, puts a record
	// of folder dir and subject in a buffer of its own.
	appendGroup(grp, dir []byte, subject string) []byte
	// manyDirs reports whether publishers choose the folders, whose
	// number is then bounded (openDirs).
	manyDirs() bool
	// keyPrefix returns the key prefix of a data object.
	keyPrefix() string
	// tail returns what the sink keeps of a data object with body (nil:
	// nothing).
	tail(body formats.Body) *iceberg.Tail
	// label adds the sink's own metadata to a data object's.
	label(meta map[string]string)

	// stored records a data batch stored at key under the intent ikey,
	// with the tail place kept; found, one recovery found stored.
	stored(ikey, key string, first, last uint64, tail *iceberg.Tail)
	found(ikey string, in *state.Intent)
	// forgettable returns those of keys, intents an export record's
	// floor passed, that may be deleted now; forgotten records those
	// deleted (failed: not deleted).
	forgettable(keys []string) []string
	forgotten(keys []string, failed map[string]bool)
	// settled reports whether everything stored is in the lake; when it
	// is not, what is left is due at once.
	settled() bool
	// chores returns the sink's upkeep, which runs on the way out before
	// the export records are written, and its cleanup, which runs after
	// the intents are deleted.
	chores(r *runner) (upkeep, cleanup []*chore)

	// recoverFiles gives back their intents to the data objects of s
	// stored without one, before s's intents are recovered.
	recoverFiles(ctx context.Context, sn *session, s *streamWriter) error
	// setUpDone finishes the set-up once every stream is recovered.
	setUpDone(ctx context.Context) error
	// namedFiles returns the keys of stored data objects that the state
	// bucket names and that are not in the lake yet (nil: none).
	namedFiles(ctx context.Context, sn *session) (map[string]bool, error)
	// close releases what the sink holds.
	close()
}

// objectSink writes data batches as objects under the path template.
type objectSink struct {
	cfg     *config.Connector
	content bool // folders read the payload or headers
}

func (o objectSink) appendDir(buf []byte, v *pathtemplate.Values, _ uint64, _ time.Time, _ []formats.Value) []byte {
	return o.cfg.Output.PathTemplate.AppendDir(buf, v)
}

func (o objectSink) appendGroup(grp, dir []byte, subject string) []byte {
	bySubject := o.cfg.Output.GroupBy == config.GroupBySubject
	if o.content {
		// Folders from the content interleave, where those of the
		// ingest time follow one another: a buffer per folder, not a
		// buffer sealed whenever the folder changes.
		grp = append(grp, dir...)
		if bySubject {
			grp = append(grp, 0)
		}
	}
	if bySubject {
		grp = append(grp, subject...)
	}
	return grp
}

func (o objectSink) manyDirs() bool { return o.content }

func (o objectSink) keyPrefix() string { return o.cfg.S3.Prefix }

func (objectSink) tail(formats.Body) *iceberg.Tail { return nil }

func (objectSink) label(map[string]string) {}

func (objectSink) stored(string, string, uint64, uint64, *iceberg.Tail) {}

func (objectSink) found(string, *state.Intent) {}

func (objectSink) forgettable(keys []string) []string { return keys }

func (objectSink) forgotten([]string, map[string]bool) {}

func (objectSink) settled() bool { return true }

func (objectSink) chores(*runner) (upkeep, cleanup []*chore) { return nil, nil }

func (objectSink) recoverFiles(context.Context, *session, *streamWriter) error { return nil }

func (objectSink) setUpDone(context.Context) error { return nil }

func (objectSink) namedFiles(context.Context, *session) (map[string]bool, error) { return nil, nil }

func (objectSink) close() {}
