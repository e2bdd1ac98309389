package exporter

import (
	"fmt"
	"time"
)

// openDirs caps the directories a connector writes at once
// ([output] max_open_directories) when a publisher chooses them: when paths
// depend on the messages' content (a payload field, a header, an event
// time) or the connector writes a table (a partition each). Every distinct
// value opens a buffer, and a buffer is an object: without a cap, a flood
// of distinct values makes an object, an intent and a PUT per message, and
// the connector's throughput falls to the store's small-PUT rate (734
// messages a second against 128,000). With it, a message that would open
// one directory more is rejected (reason "cardinality"): the flood costs
// rejected objects, a few a day, and the directories open keep their rate.
//
// A directory counts from its first message until window (max_file_age)
// after its last, not only while a buffer of it is open: a flood of
// distinct values would otherwise open, seal and upload a buffer of one
// message for each of them as fast as uploads end. So the flood makes at
// most max objects per window, and a directory that keeps receiving
// messages keeps its place across the rotations of its files.
//
// Paths of the JetStream timestamp, subject and stream alone are not
// capped: their buffers follow one directory at a time each, and a subject
// of its own per buffer is what group_by chooses.
//
// openDirs is pure: the time is an argument. A nil *openDirs caps nothing.
type openDirs struct {
	max    int
	window time.Duration
	dirs   map[string]*openDir
	last   *openDir  // the directory admitted last: consecutive messages mostly share it
	swept  time.Time // when sweep last forgot directories
}

// openDir is a directory that counts, and the time of its last message.
type openDir struct {
	name string
	seen time.Time
}

// newOpenDirs returns a cap of limit directories open at once, each open
// until window after its last message; nil (no cap) when limit is 0.
func newOpenDirs(limit int, window time.Duration) *openDirs {
	if limit <= 0 {
		return nil
	}
	return &openDirs{max: limit, window: window, dirs: make(map[string]*openDir)}
}

// admit reports whether a message of directory dir, arriving at now, may be
// written: dir is open already, or fewer than max are. It allocates only
// when it opens a directory.
func (o *openDirs) admit(dir []byte, now time.Time) bool {
	if o == nil {
		return true
	}
	if d := o.last; d != nil && d.name == string(dir) {
		d.seen = now
		return true
	}
	if d, ok := o.dirs[string(dir)]; ok {
		d.seen = now
		o.last = d
		return true
	}
	if len(o.dirs) >= o.max {
		return false
	}
	d := &openDir{name: string(dir), seen: now}
	o.dirs[d.name] = d
	o.last = d
	return true
}

// sweepEvery bounds how often sweep walks the directories: a cap may be
// set to millions.
const sweepEvery = time.Second

// sweep forgets the directories without a message for window at now: they
// no longer count. It walks them at most once per sweepEvery.
func (o *openDirs) sweep(now time.Time) {
	if o == nil || now.Sub(o.swept) < sweepEvery {
		return
	}
	o.swept = now
	for name, d := range o.dirs {
		if now.Sub(d.seen) >= o.window {
			delete(o.dirs, name)
			if o.last == d {
				o.last = nil
			}
		}
	}
}

// open is the number of directories that count at the last admit or sweep.
func (o *openDirs) open() int {
	if o == nil {
		return 0
	}
	return len(o.dirs)
}

// CardinalityError is why a message was rejected when its directory would
// have been one more than [output] max_open_directories allows; Dir is that
// directory (a table's partition path).
type CardinalityError struct {
	Dir string
	Max int
}

func (e *CardinalityError) Error() string {
	return fmt.Sprintf("cardinality: directory %q would be one more than the %d written at once (max_open_directories)", e.Dir, e.Max)
}
