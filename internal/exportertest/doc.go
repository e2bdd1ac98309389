// Package exportertest starts real nats-server and MinIO processes on
// loopback ports, for integration tests and the local demo.
//
// The servers are pinned versions ([NATSServerVersion], [MinIOVersion]),
// built once with "go install" into a cache directory outside the
// repository and reused from there. The package does not import "testing",
// so programs under cmd/ can use it too.
//
// A typical test package shares one server of each kind among its tests
// and isolates them by stream and bucket names. The servers start when a
// test first asks for them; TestMain stops them:
//
//	var shared exportertest.Shared
//
//	func TestMain(m *testing.M) { code := m.Run(); shared.Stop(); os.Exit(code) }
//
//	func TestExport(t *testing.T) {
//		ns, ms := shared.NATS(t), shared.MinIO(t)
//		...
//	}
//
// Every helper that starts a server for a test (Shared, NATS, MinIO,
// NATSCluster) skips the test under -short, as an integration test, so
// "go test -short ./..." starts no server and needs no server binary.
// Programs start servers with StartNATS and StartMinIO.
//
// Every server listens on 127.0.0.1 only. Stop ends the process it started
// (and only that one) and removes the temporary directory it created.
package exportertest
