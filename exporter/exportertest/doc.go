// Package exportertest starts real nats-server and MinIO processes on
// loopback ports, for integration tests and the local demo.
//
// The servers are pinned versions ([NATSServerVersion], [MinIOVersion]),
// built once with "go install" into a cache directory outside the
// repository and reused from there. The package does not import "testing",
// so programs under cmd/ can use it too.
//
// A typical test package starts one server of each kind in TestMain and
// isolates its tests by stream and bucket names:
//
//	nats, err := exportertest.StartNATS(exportertest.NATSOptions{})
//	if err != nil { ... }
//	defer nats.Stop()
//
// Every server listens on 127.0.0.1 only. Stop ends the process it started
// (and only that one) and removes the temporary directory it created.
package exportertest
