package exporter

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/objstore"
)

// MemStore is an in-memory object store for tests: an ObjectStore and an
// ObjectReader that honour If-None-Match and return user metadata as S3
// does (names in canonical form). Its first n puts fail with err, as a store
// in an outage would. The zero value is an empty store that never fails.
//
// It is exported (to the tests only) so that the conformance test in
// exporter_test runs it through the contract S3Store meets.
type MemStore struct {
	mu      sync.Mutex
	n       int // the first n puts fail with err
	err     error
	puts    int // puts tried, the failed ones included
	keys    []string
	objects map[string]memObject
}

type memObject struct {
	body []byte
	md   map[string]string
}

// Put implements ObjectStore.
func (s *MemStore) Put(_ context.Context, key string, body formats.Body, o objstore.PutOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts++
	if s.puts <= s.n {
		return s.err
	}
	if err := memKeyError(key); err != nil {
		return err
	}
	if _, ok := s.objects[key]; ok && o.IfNoneMatch {
		return fmt.Errorf("put %s: %w", key, objstore.ErrExists)
	}
	s.store(key, body.Bytes(), o.Metadata)
	s.keys = append(s.keys, key)
	return nil
}

// memKeyError refuses the keys S3 or MinIO refuse: longer than 1024 bytes,
// not UTF-8, or with a segment longer than 255 bytes (MinIO's, a file
// name on its disks).
func memKeyError(key string) error {
	bad := len(key) > 1024 || !utf8.ValidString(key)
	for seg := range strings.SplitSeq(key, "/") {
		bad = bad || len(seg) > 255
	}
	if bad {
		return &objstore.KeyError{Key: key, Code: "XMinioInvalidObjectName", Err: fmt.Errorf("put %s: invalid object name", key)}
	}
	return nil
}

// store sets the object at key; the caller holds mu or owns s.
func (s *MemStore) store(key string, body []byte, md map[string]string) {
	if s.objects == nil {
		s.objects = map[string]memObject{}
	}
	obj := memObject{body: body}
	if len(md) > 0 {
		obj.md = make(map[string]string, len(md))
		for k, v := range md {
			obj.md[http.CanonicalHeaderKey(k)] = v
		}
	}
	s.objects[key] = obj
}

// preset stores an object with metadata md at key, as another writer (or an
// earlier attempt) would have, without counting a put.
func (s *MemStore) preset(key string, md map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store(key, nil, md)
}

// Head implements ObjectStore.
func (s *MemStore) Head(_ context.Context, key string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[key]
	if !ok {
		return nil, fmt.Errorf("head %s: %w", key, objstore.ErrNotFound)
	}
	return obj.md, nil
}

// Get implements ObjectReader.
func (s *MemStore) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, objstore.ErrNotFound)
	}
	return slices.Clone(obj.body), nil
}

// List implements ObjectReader, in key order as S3 lists.
func (s *MemStore) List(ctx context.Context, prefix string, fn func(key string, md map[string]string) error) error {
	s.mu.Lock()
	var keys []string
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	s.mu.Unlock()
	slices.Sort(keys)
	for _, k := range keys {
		md, err := s.Head(ctx, k)
		if err != nil {
			continue // deleted since
		}
		if err := fn(k, md); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes the object at key; a missing object is no error, as in S3.
func (s *MemStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, key)
	return nil
}
