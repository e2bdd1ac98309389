package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/iceberg"
)

// Plans returns st as the store of an Iceberg table's commit plans,
// which live in the state bucket beside the intents they claim.
func Plans(st Store) iceberg.PlanStore { return planStore{st} }

// planStore is the iceberg.PlanStore of the state bucket.
type planStore struct{ st Store }

func (p planStore) Create(ctx context.Context, key string, value []byte) error {
	err := p.st.Create(ctx, key, value)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("%w: %w", iceberg.ErrExists, err)
	}
	return err
}

func (p planStore) Get(ctx context.Context, key string) ([]byte, error) {
	v, _, err := p.st.Get(ctx, key)
	if errors.Is(err, ErrNoRecord) {
		return nil, iceberg.ErrMissing
	}
	return v, err
}

func (p planStore) Delete(ctx context.Context, key string) error { return p.st.Delete(ctx, key) }

func (p planStore) Release(ctx context.Context, key string, value []byte) error {
	held, rev, err := p.st.Get(ctx, key)
	if errors.Is(err, ErrNoRecord) || err == nil && !bytes.Equal(held, value) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := p.st.DeleteRev(ctx, key, rev); err != nil && !errors.Is(err, ErrRecordChanged) {
		return err
	}
	return nil
}

func (p planStore) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	return p.st.List(ctx, prefix)
}
