package objstore

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
	// MetaConsumer names the consumer whose loss a marker records.
	MetaConsumer = "Jetlake-Consumer"
	// MetaSeqs is the exact set of sequences in the object, in the intent's
	// encoding, when it is short enough for object metadata; verify uses it.
	MetaSeqs = "Jetlake-Seqs"
	// MetaConnector and MetaTable name the connector and the Iceberg table
	// (by its UUID) a table's data file was written for: the orphan sweep
	// removes only files whose metadata names its own connector and table.
	MetaConnector = "Jetlake-Connector"
	MetaTable     = "Jetlake-Table"
)

// MetaCompaction is the object metadata that names the compaction that
// wrote a data file.
const MetaCompaction = "Jetlake-Compaction"
