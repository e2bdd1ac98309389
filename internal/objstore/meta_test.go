package objstore

import (
	"strings"
	"testing"
)

// The sequence set goes into metadata only when everything fits in what S3
// takes: a connector with long stream and consumer names reads the set from
// the object instead of having its PUT refused.
func TestSetSeqsKeepsTheMetadataWithinWhatS3Takes(t *testing.T) {
	enc := []byte(`"` + strings.Repeat("1-2,", 200) + `"`) // 800 bytes
	for _, tc := range []struct {
		name    string
		nameLen int
		want    bool
	}{
		{"short names", 10, true},
		{"long names", 600, false},
	} {
		md := map[string]string{MetaStream: strings.Repeat("s", tc.nameLen), MetaConsumer: strings.Repeat("c", tc.nameLen), MetaFirstSeq: "1", MetaLastSeq: "2"}
		SetSeqs(md, enc)
		_, got := md[MetaSeqs]
		size := 0
		for k, v := range md {
			size += len(k) + len(v)
		}
		if got != tc.want || size > MaxMetadata {
			t.Errorf("%s: set %v (want %v), %d bytes of metadata", tc.name, got, tc.want, size)
		}
	}
}
