package exportertest

import (
	"context"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/state"
)

// MemKV is an in-memory state bucket, for tests: the Create, Delete,
// DeleteRev, List, Get and Update of a state.Store, with its errors. Safe for concurrent
// use.
type MemKV struct {
	mu   sync.Mutex
	m    map[string][]byte
	revs map[string]uint64
	rev  uint64
}

// NewMemKV returns an empty MemKV.
func NewMemKV() *MemKV { return &MemKV{m: map[string][]byte{}, revs: map[string]uint64{}} }

// Get returns key's value and revision, or state.ErrNoRecord.
func (s *MemKV) Get(_ context.Context, key string) ([]byte, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok {
		return nil, 0, state.ErrNoRecord
	}
	return v, s.revs[key], nil
}

// Update stores value under key if key's revision is rev (0: key must not
// exist), or returns state.ErrRecordChanged.
func (s *MemKV) Update(_ context.Context, key string, value []byte, rev uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.revs[key] != rev {
		return 0, state.ErrRecordChanged
	}
	s.rev++
	s.m[key], s.revs[key] = value, s.rev
	return s.rev, nil
}

// Create stores value under key, or returns jetstream.ErrKeyExists.
func (s *MemKV) Create(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; ok {
		return jetstream.ErrKeyExists
	}
	s.rev++
	s.m[key], s.revs[key] = value, s.rev
	return nil
}

// Delete removes key; a missing key is not an error.
func (s *MemKV) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	delete(s.revs, key)
	return nil
}

// DeleteRev removes key if its revision is rev, or returns
// state.ErrRecordChanged.
func (s *MemKV) DeleteRev(_ context.Context, key string, rev uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.revs[key] != rev {
		return state.ErrRecordChanged
	}
	delete(s.m, key)
	delete(s.revs, key)
	return nil
}

// List returns every key under prefix with its value.
func (s *MemKV) List(_ context.Context, prefix string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range s.m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out, nil
}

// Put stores value under key whatever is there, as a hand or another
// process would.
func (s *MemKV) Put(key string, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	s.m[key], s.revs[key] = value, s.rev
}

// Value returns key's value, and whether there is one.
func (s *MemKV) Value(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok
}

// Len is how many keys there are.
func (s *MemKV) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
