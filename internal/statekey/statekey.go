// Package statekey names every key jetlake writes to its state bucket, in
// one place: the intents of batches in flight, the export records, the
// commit plans and claims of an Iceberg table and the table's recorded
// UUID, the partition leases and the membership keys. It is pure.
//
// Every key is dotted tokens: a family, then the connector's name
// (base64url, since names allow bytes KV keys do not), then what the family
// needs. The connector is always the second token, so a permission on
// "$KV.<bucket>.*.<connector>.>" (Writes) covers every key a connector
// writes and no other connector's.
package statekey

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// The key families.
const (
	FamilyIntent = "intent"  // a batch in flight: intent.<connector>.<stream>.<consumer>.<id>
	FamilyExport = "export"  // an export record: export.<connector>.<stream>.<consumer>
	FamilyTable  = "table"   // a table's UUID: table.<connector>.<namespace>.<table>
	FamilyCommit = "iceberg" // a table's plans and claims: iceberg.<connector>.<namespace>.<table>.<plan|done|claim>.<id>
	FamilyLease  = "lease"   // a partition lease: lease.<connector>.<stream>.<consumer>.<k>
	FamilyMember = "member"  // a live instance: member.<connector>.<instance>
)

// Token encodes a name as one key token: base64url without padding.
func Token(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

// Writes is the tail of the subject of every key the connector writes,
// after the bucket's "$KV.<bucket>.": "*.<connector>.>".
func Writes(connector string) string { return "*." + Token(connector) + ".>" }

// Intents is the prefix of every intent of the connector.
func Intents(connector string) string { return FamilyIntent + "." + Token(connector) + "." }

// StreamIntents is the prefix of the connector's intents for one stream
// and consumer.
func StreamIntents(connector, stream, consumer string) string {
	return Intents(connector) + Token(stream) + "." + Token(consumer) + "."
}

// Record is the key of the connector's export record for one stream and
// consumer.
func Record(connector, stream, consumer string) string {
	return FamilyExport + "." + Token(connector) + "." + Token(stream) + "." + Token(consumer)
}

// TableID is the key of the UUID of the connector's table. It is a family
// of its own: a clean run leaves no key under Commits, while the table's
// identity stays for good. Namespace and table names are tokens KV keys
// allow.
func TableID(connector, namespace, table string) string {
	return FamilyTable + "." + Token(connector) + "." + namespace + "." + table
}

// Commits is the prefix of the plans, done marks and claims of the
// connector's commits to a table.
func Commits(connector, namespace, table string) string {
	return FamilyCommit + "." + Token(connector) + "." + namespace + "." + table + "."
}

// Plans is the prefix of the commit plans under commits (a Commits prefix).
func Plans(commits string) string { return commits + "plan." }

// Plan is the key of a commit plan.
func Plan(commits, id string) string { return Plans(commits) + id }

// Done is the key that marks a plan whose commit landed.
func Done(commits, id string) string { return commits + "done." + id }

// Claim is the key of the claim of an intent's file by a plan: the intent
// key, dotted, becomes one token.
func Claim(commits, intentKey string) string {
	return commits + "claim." + strings.ReplaceAll(intentKey, ".", "_")
}

// IsClaimOrDone reports whether key, under commits, is a claim or a done
// mark.
func IsClaimOrDone(commits, key string) bool {
	return strings.HasPrefix(key, commits+"claim.") || strings.HasPrefix(key, commits+"done.")
}

// Leases is the prefix of the leases of a partitioned entry's partitions.
func Leases(connector, stream, consumer string) string {
	return FamilyLease + "." + Token(connector) + "." + Token(stream) + "." + Token(consumer) + "."
}

// Lease is the key of partition k's lease.
func Lease(connector, stream, consumer string, k int) string {
	return LeaseAt(Leases(connector, stream, consumer), k)
}

// LeaseAt is the key of partition k's lease under leases (a Leases prefix).
func LeaseAt(leases string, k int) string { return leases + strconv.Itoa(k) }

// LeasePartition returns the partition, among n, whose lease key is key,
// with leases the prefix of the entry's lease keys. Only the key jetlake
// writes names a partition: "01" or "+1" is not partition 1's.
func LeasePartition(key, leases string, n int) (int, bool) {
	k, err := strconv.Atoi(strings.TrimPrefix(key, leases))
	if err != nil || k < 0 || k >= n || key != LeaseAt(leases, k) {
		return 0, false
	}
	return k, true
}

// Members is the prefix of the membership keys of the connector's live
// instances.
func Members(connector string) string { return FamilyMember + "." + Token(connector) + "." }
