package objstore

import (
	"strconv"

	"github.com/jetlake/jetlake/internal/progress"
)

// Object metadata written on every data object (x-amz-meta-*).
const (
	MetaFirstSeq = "Jetlake-First-Seq"
	MetaLastSeq  = "Jetlake-Last-Seq"
	MetaCount    = "Jetlake-Count"
	MetaFormat   = "Jetlake-Format"
	MetaStream   = "Jetlake-Stream"
	MetaVersion  = "Jetlake-Version"
	// MetaStreamCreated and the stream name identify the stream: a stream
	// re-created under the same name starts its sequences again.
	MetaStreamCreated = "Jetlake-Stream-Created"
	// MetaIntent is the id of the intent the object was written under.
	MetaIntent = "Jetlake-Intent"
	// MetaConsumer names the consumer whose messages a data or rejected
	// object holds, or whose loss a marker records: connectors that share
	// a prefix rebuild their export records from their own objects only.
	MetaConsumer = "Jetlake-Consumer"
	// MetaSeqs is the exact set of sequences in the object, in the intent's
	// encoding, when it is short enough for object metadata; verify uses it.
	MetaSeqs = "Jetlake-Seqs"
	// MetaConnector and MetaTable name the connector and the Iceberg table
	// (by its UUID) a table's data file was written for: the orphan sweep
	// removes only files whose metadata names its own connector and table.
	MetaConnector = "Jetlake-Connector"
	MetaTable     = "Jetlake-Table"
	// MetaOrdered is "true" on a data object whose records are in stream
	// sequence order (redeliveries can put a batch's records out of it):
	// a restore merges such an object as it reads it.
	MetaOrdered = "Jetlake-Ordered"
)

// MetaCompaction is the object metadata that names the compaction that
// wrote a data file.
const MetaCompaction = "Jetlake-Compaction"

// MaxMetaSeqs bounds the encoded sequence set put in metadata.
const MaxMetaSeqs = 1024

// MaxMetadata is the most user metadata S3 takes on an object: the bytes
// of its keys and values.
const MaxMetadata = 2048

// SetSeqs puts enc, the sequences an object holds in their JSON form
// (progress.Seqs.MarshalJSON), in md as MetaSeqs, when it is short enough
// for object metadata, beside what md holds already.
func SetSeqs(md map[string]string, enc []byte) {
	if len(enc) < 2 || len(enc) > MaxMetaSeqs+2 {
		return
	}
	size := len(MetaSeqs) + len(enc) - 2
	for k, v := range md {
		size += len(k) + len(v)
	}
	if size <= MaxMetadata {
		md[MetaSeqs] = string(enc[1 : len(enc)-1])
	}
}

// SeqsOf returns the sequences a data object's metadata says it holds:
// its sequence set, or its first to last sequence when the count says
// there is no gap.
func SeqsOf(md map[string]string) (progress.Seqs, bool) {
	first, err1 := strconv.ParseUint(md[MetaFirstSeq], 10, 64)
	last, err2 := strconv.ParseUint(md[MetaLastSeq], 10, 64)
	count, err3 := strconv.ParseUint(md[MetaCount], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || first == 0 || last < first {
		return progress.Seqs{}, false
	}
	if enc := md[MetaSeqs]; enc != "" {
		var s progress.Seqs
		if err := s.UnmarshalJSON([]byte(strconv.Quote(enc))); err != nil || s.First() != first || s.Last() != last || uint64(s.Len()) != count {
			return progress.Seqs{}, false
		}
		return s, true
	}
	if last-first+1 != count {
		return progress.Seqs{}, false
	}
	return progress.SeqsOf([]progress.Range{{First: first, Last: last}}), true
}
