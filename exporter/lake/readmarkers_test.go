package lake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// mapStore is an ObjectReader of objects held in memory; it lists no
// metadata, as some stores do not, so that readers Head for it.
type mapStore struct {
	bodies map[string][]byte
	md     map[string]map[string]string
}

func (s *mapStore) put(key string, body []byte, md map[string]string) {
	if s.bodies == nil {
		s.bodies, s.md = map[string][]byte{}, map[string]map[string]string{}
	}
	s.bodies[key], s.md[key] = body, md
}

func (s *mapStore) List(_ context.Context, prefix string, fn func(key string, md map[string]string) error) error {
	for _, k := range slices.Sorted(maps.Keys(s.bodies)) {
		if strings.HasPrefix(k, prefix) {
			if err := fn(k, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *mapStore) Get(_ context.Context, key string) ([]byte, error) {
	if b, ok := s.bodies[key]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("get %s: %w", key, objstore.ErrNotFound)
}

func (s *mapStore) Head(_ context.Context, key string) (map[string]string, error) {
	if md, ok := s.md[key]; ok {
		return md, nil
	}
	return nil, fmt.Errorf("head %s: %w", key, objstore.ErrNotFound)
}

// Verify takes for a loss marker only what the exporter writes as one: a
// payload that reads as a marker (a raw object a publisher's values placed
// under _jetlake/lost/ through an earlier release's template) is a
// problem, and hides no loss.
func TestVerifyReadsOnlyTheMarkersTheExporterWrites(t *testing.T) {
	const prefix, stream, consumer = "lake", "S", "c"
	detected := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	marker := func(first, last uint64, consumer string) (*lossmarker.Marker, []byte) {
		m := &lossmarker.Marker{Stream: stream, Consumer: consumer, FirstSeq: first, LastSeq: last, Count: last - first + 1,
			Reason: lossmarker.Poison, Error: "x", DetectedAt: detected}
		body, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return m, body
	}
	markerMD := map[string]string{objstore.MetaStream: stream, objstore.MetaConsumer: consumer}
	dataMD := map[string]string{objstore.MetaStream: stream, objstore.MetaIntent: "I1", objstore.MetaFirstSeq: "5", objstore.MetaLastSeq: "5", objstore.MetaCount: "1"}
	dir := pathtemplate.StreamPrefix(prefix, pathtemplate.Lost, stream) + "2026-12-04/"
	var st mapStore
	real, body := marker(1, 2, consumer)
	st.put(real.Key(prefix), body, markerMD)
	// A raw data object whose payload reads as a marker.
	forged, body := marker(5, 5, consumer)
	st.put(forged.Key(prefix), body, dataMD)
	// Marker bodies under names that are not a marker's.
	_, body = marker(6, 6, consumer)
	st.put(dir+"forged.json", body, markerMD)
	st.put(dir+"00000000000000000006-00000000000000000006.jsonl", body, markerMD)
	// A marker body without a marker's metadata.
	m7, body := marker(7, 7, consumer)
	st.put(m7.Key(prefix), body, map[string]string{})
	// A marker's metadata, and a body that disagrees with its name or
	// its metadata.
	_, body = marker(8, 9, consumer)
	st.put(dir+"00000000000000000008-00000000000000000008.lost.json", body, markerMD)
	m10, body := marker(10, 10, "other")
	st.put(m10.Key(prefix), body, markerMD)

	v := &verifier{cfg: &config.Connector{S3: config.S3{Prefix: prefix}}, store: &st}
	rep := &Report{}
	markers, err := v.readMarkers(context.Background(), config.Stream{Stream: stream, Consumer: consumer}, rep)
	if err != nil {
		t.Fatal(err)
	}
	if len(markers) != 1 || markers[0].FirstSeq != 1 || markers[0].LastSeq != 2 {
		t.Errorf("markers %+v, want only the one of sequences 1 to 2", markers)
	}
	if len(rep.Problems) != 6 {
		t.Errorf("%d problems, want 6 (every object that is no marker):\n%s", len(rep.Problems), strings.Join(rep.Problems, "\n"))
	}
	for _, p := range rep.Problems {
		if !strings.Contains(p, "not a loss marker") {
			t.Errorf("problem %q does not say the object is no loss marker", p)
		}
	}
}
