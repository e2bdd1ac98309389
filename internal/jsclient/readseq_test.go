package jsclient

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
)

// A read of a stream's sequences ends with an error when the server keeps
// refusing the consumer it reads through, and does not wait for ever.
// The ordered consumer re-creates its consumer at every fetch and, by
// default, tries for ever and outside the caller's context: a cluster
// whose leaders kept stepping down held a set-up in such a read for two
// minutes. Here the stream takes one consumer and the user may not delete
// one, so the second is refused for good.
func TestReadingSequencesEndsWhenTheServerKeepsRefusingTheConsumer(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	body := `authorization {
  users = [{user: a, password: a, permissions: {publish: {deny: ["$JS.API.CONSUMER.DELETE.>"]}}}]
}
no_auth_user: a
`
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := exportertest.NATS(t, exportertest.NATSOptions{Args: []string{"-c", conf}})
	// The refused deletions are expected: not reported.
	nc, err := nats.Connect(ns.URL, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RS", Subjects: []string{"rs.>"}, MaxConsumers: 1}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "rs.a", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := ReadSequences(ctx, js, "RS", []string{"rs.>"}, 1, 3, 0, 0)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the read succeeded through a consumer the server refuses")
		}
		t.Logf("the read ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the read still waits 30 s after the server first refused its consumer")
	}
}
