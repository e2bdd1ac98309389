// Package iceberg writes jetlake's parquet files into an Apache Iceberg
// table (format v2) through a catalog: the SQL catalog of iceberg-go (the
// embedded sqlite or PostgreSQL, with the Java JdbcCatalog's tables), a
// REST catalog, or AWS Glue; over S3 file IO that removes files only
// inside the table's location.
//
// # Exactly once
//
// Every commit carries an id of jetlake's own in its snapshot summary
// (CommitIDProperty). Table.Commit starts each attempt from the table as it
// is and first looks for the id among the current snapshot's ancestors, so
// a commit that landed though its answer was lost is never repeated; a
// conflict with another writer ("branch main has changed", which iceberg-go
// does not retry) and an unknown outcome are retried with a fresh
// transaction.
//
// # The ack point
//
// This package is the table side of the exporter's Iceberg output (the
// connector's [iceberg] table). The exporter acks a batch's messages once its data file is stored and
// recorded for commit in the state bucket, not once the table commit
// lands. The record is the batch's intent, which already names the object
// and the exact sequences in it, and survives a crash. Acking after the
// commit would tie commit_interval to AckWait (every message would wait
// for the next commit while the server's clock runs) and make one slow
// catalog commit redeliver a whole interval of messages; acking at the
// record keeps the commit interval free, and costs nothing in safety:
//
//   - A commit is planned before it is tried: a plan record in the state
//     bucket names its id and its files' intents, and each intent is
//     claimed for the plan with a compare-and-swap on its revision, so that
//     two instances (one pinned before a takeover, one after) never put a
//     file in two commits.
//   - Recovery finds a plan whose id the table holds (done), one it does
//     not hold (committed again, under the same id), and stored files no
//     plan claims (planned anew). An intent is deleted only once its plan
//     is in the table and the export record's floor has passed it.
//
// Until its commit lands, a data file is stored under the table's data
// folder but not in the table: readers see each hour's files all at once,
// in the commit that adds them.
//
// # Files
//
// A data file holds the rows of one partition (Partitioner), named by its
// sequence range under data/<partition>/, sized by max_file_size. The
// parquet columns carry the field ids the table's schema has for them, by
// name (formats.Options.FieldIDs, Table.FieldIDs).
//
// # Schema evolution
//
// Open adds the columns a connector gained to the table, optional, and
// widens int to long and float to double (Evolve); it refuses to drop,
// rename or retype a column, or to change the partitioning.
package iceberg
