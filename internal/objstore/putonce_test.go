package objstore_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/objstore"
)

// mapStore keeps objects' metadata by key; with conditional writes it
// refuses a Put over an existing key, as S3's If-None-Match does.
type mapStore map[string]map[string]string

func (m mapStore) Put(_ context.Context, key string, _ formats.Body, o objstore.PutOptions) error {
	if _, ok := m[key]; ok && o.IfNoneMatch {
		return objstore.ErrExists
	}
	m[key] = maps.Clone(o.Metadata)
	return nil
}

func (m mapStore) Head(_ context.Context, key string) (map[string]string, error) {
	md, ok := m[key]
	if !ok {
		return nil, objstore.ErrNotFound
	}
	return md, nil
}

// An object is written once, with or without conditional writes: its own
// earlier attempt is fine, another writer's object at the key is a
// collision that names the key, and nothing is overwritten.
func TestPutOnceWritesAnObjectOnceAndNamesACollision(t *testing.T) {
	ctx := context.Background()
	body := formats.NewBody([]byte("x"))
	for _, conditional := range []bool{true, false} {
		st := mapStore{}
		put := func(id string) error {
			o := objstore.PutOptions{Metadata: map[string]string{objstore.MetaIntent: id}, IfNoneMatch: conditional}
			return objstore.PutOnce(ctx, st, "k", body, o, objstore.WrittenBy(id))
		}
		if err := put("a"); err != nil {
			t.Fatalf("conditional %v: first write: %v", conditional, err)
		}
		if err := put("a"); err != nil {
			t.Fatalf("conditional %v: the same batch again: %v", conditional, err)
		}
		var ce *objstore.CollisionError
		if err := put("b"); !errors.As(err, &ce) || ce.Key != "k" || ce.Intent != "a" {
			t.Fatalf("conditional %v: another batch at the key: %v", conditional, err)
		}
		if st["k"][objstore.MetaIntent] != "a" {
			t.Fatalf("conditional %v: the object was overwritten: %v", conditional, st["k"])
		}
		marker := func(stream, consumer string) error {
			o := objstore.PutOptions{Metadata: map[string]string{objstore.MetaStream: stream, objstore.MetaConsumer: consumer}, IfNoneMatch: conditional}
			return objstore.PutOnce(ctx, st, "m", body, o, objstore.MarkerOf(stream, consumer))
		}
		if err := marker("S", "c"); err != nil {
			t.Fatal(err)
		}
		if err := marker("S", "c"); err != nil {
			t.Fatalf("conditional %v: the same marker again: %v", conditional, err)
		}
		if err := marker("S", "other"); !errors.As(err, &ce) || !ce.Marker || ce.Consumer != "c" || ce.Key != "m" {
			t.Fatalf("conditional %v: another consumer's marker at the key: %v", conditional, err)
		}
	}
}
