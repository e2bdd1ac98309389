package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/statekey"
)

// Holder is the value of a lease or membership key: who holds it.
type Holder struct {
	Instance string    `json:"instance"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
}

// maxHolderValue bounds the value of a lease or membership key: jetlake's
// are under 400 bytes, a host name of 255 among them.
const maxHolderValue = 1024

// ParseHolder decodes the value of a lease or membership key. What the
// state bucket holds is read as input, not as truth: a value that jetlake
// would not write is an error, saying what was found. Such a value is no
// JSON object, is too long, names no instance or an instance id that no
// key could carry, or lacks the process id or the start time every
// instance writes.
func ParseHolder(b []byte) (Holder, error) {
	if len(b) > maxHolderValue {
		return Holder{}, fmt.Errorf("a value of %d bytes, more than a holder's %d", len(b), maxHolderValue)
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return Holder{}, fmt.Errorf("no JSON holder: %w", err)
	}
	if why := CheckInstanceID(h.Instance); why != "" {
		return Holder{}, errors.New(why)
	}
	if h.PID < 1 || h.Started.IsZero() {
		return Holder{}, errors.New("no process id or no start time")
	}
	return h, nil
}

// maxInstanceID bounds an instance id; jetlake's are NUIDs, 22 characters.
const maxInstanceID = 64

// CheckInstanceID says why id can not be an instance's, or returns "".
// An id is one token of a membership key: letters, digits, '-' and '_'.
func CheckInstanceID(id string) string {
	if id == "" {
		return "names no instance"
	}
	if len(id) > maxInstanceID {
		return fmt.Sprintf("an instance id of %d bytes, more than %d", len(id), maxInstanceID)
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Sprintf("instance id %q has a character other than letters, digits, '-' and '_'", id)
		}
	}
	return ""
}

// ValueStart is the start of a value found in the state bucket, for a
// message.
func ValueStart(b []byte) string {
	const n = 64
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// NewHolder describes this process.
func NewHolder(id string) Holder {
	host, _ := os.Hostname()
	return Holder{Instance: id, Host: host, PID: os.Getpid(), Started: time.Now().UTC().Truncate(time.Second)}
}

// PartitionHolders reads, from the state bucket kv, who holds each
// partition of stream entry s of connector: partition number → holder.
// Free partitions are not in the map, nor are those whose lease has a
// value no instance writes (an instance takes such a lease as free).
func PartitionHolders(ctx context.Context, kv jetstream.KeyValue, connector string, s config.Stream) (map[int]Holder, error) {
	prefix := statekey.Leases(connector, s.Stream, s.Consumer)
	w, err := kv.WatchFiltered(ctx, []string{prefix + ">"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("partition leases: %w", err)
	}
	defer w.Stop()
	out := map[int]Holder{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("partition leases: %w", ctx.Err())
		case e := <-w.Updates():
			if e == nil {
				return out, nil
			}
			k, ok := statekey.LeasePartition(e.Key(), prefix, s.Partitions)
			if !ok {
				continue
			}
			if h, err := ParseHolder(e.Value()); err == nil {
				out[k] = h
			}
		}
	}
}
