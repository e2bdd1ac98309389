package jsclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/internal/failure"
)

// violation is the error nats.go hands the error handler for the server's
// text.
func violation(text string) error {
	return fmt.Errorf("%w: %s", nats.ErrPermissionViolation, text)
}

func TestAPermissionsViolationNamesTheSubjectAndTheGrantToAdd(t *testing.T) {
	for _, tt := range []struct {
		name        string
		err         error
		op, subject string
		want        string // nil result when ""
	}{
		{
			name: "publish", err: violation(`Permissions Violation for Publish to "$JS.API.STREAM.MSG.GET.ORDERS"`),
			op: "publish", subject: "$JS.API.STREAM.MSG.GET.ORDERS",
			want: `nats: permission denied: publish to "$JS.API.STREAM.MSG.GET.ORDERS": add it to the user's publish permissions`,
		},
		{
			name: "an ack", err: violation(`Permissions Violation for Publish to "$JS.ACK.ORDERS.jetlake.1.7.7.1796282777901409883.98"`),
			op: "publish", subject: "$JS.ACK.ORDERS.jetlake.1.7.7.1796282777901409883.98",
			want: `publish to "$JS.ACK.ORDERS.jetlake.1.7.7.1796282777901409883.98": add "$JS.ACK.ORDERS.jetlake.>" to the user's publish permissions`,
		},
		{
			name: "an ack in a domain", err: violation(`Permissions Violation for Publish to "$JS.ACK.hub.ACCHASH.ORDERS.jetlake.1.7.7.1796282777901409883.98.TOKEN"`),
			op: "publish", subject: "$JS.ACK.hub.ACCHASH.ORDERS.jetlake.1.7.7.1796282777901409883.98.TOKEN",
			want: `add "$JS.ACK.hub.*.ORDERS.jetlake.>" to the user's publish permissions`,
		},
		{
			name: "subscription", err: violation(`Permissions Violation for Subscription to "_INBOX.abc.*"`),
			op: "subscribe", subject: "_INBOX.abc.*",
			want: `nats: permission denied: subscribe to "_INBOX.abc.*": add it to the user's subscribe permissions`,
		},
		{
			name: "queue subscription", err: violation(`Permissions Violation for Subscription to "jobs.>" using queue "q"`),
			op: "subscribe", subject: "jobs.>",
			want: `subscribe to "jobs.>"`,
		},
		{
			name: "a text naming no subject", err: violation(`Permissions Violation for Publish with Reply of "$GR.x"`),
			want: `nats: permissions violation: Permissions Violation for Publish with Reply of "$GR.x": check the user's permissions`,
		},
		{name: "another error", err: nats.ErrSlowConsumer},
		{name: "no error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pe := ParsePermissionError(tt.err)
			if tt.want == "" {
				if pe != nil {
					t.Fatalf("got %v, want nil", pe)
				}
				return
			}
			if pe == nil {
				t.Fatal("got nil")
			}
			if pe.Op != tt.op || pe.Subject != tt.subject {
				t.Errorf("op %q subject %q, want %q %q", pe.Op, pe.Subject, tt.op, tt.subject)
			}
			if msg := pe.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("message %q, want one line with %q", msg, tt.want)
			}
			if !errors.Is(pe, nats.ErrPermissionViolation) {
				t.Error("does not wrap nats.ErrPermissionViolation")
			}
		})
	}
}

func TestAViolationEndsTheWatchedContextsAsPermanentAndLeavesOthers(t *testing.T) {
	var w PermissionWatch
	running, stop := w.Context(context.Background())
	defer stop()
	released, release := w.Context(context.Background())
	release()
	if w.Observe(nats.ErrSlowConsumer) {
		t.Fatal("a slow consumer taken for a violation")
	}
	if running.Err() != nil {
		t.Fatal("another error ended the context")
	}
	if !w.Observe(violation(`Permissions Violation for Publish to "$JS.ACK.S.c.>"`)) {
		t.Fatal("the violation was not taken for one")
	}
	select {
	case <-running.Done():
	case <-time.After(time.Second):
		t.Fatal("the violation did not end the running context")
	}
	denied := Denied(running)
	var pe *PermissionError
	if !failure.IsPermanent(denied) || !errors.As(denied, &pe) || pe.Subject != "$JS.ACK.S.c.>" {
		t.Fatalf("Denied: %v, want a permanent error naming the subject", denied)
	}
	if Denied(released) != nil {
		t.Fatal("a context released before the violation took it")
	}
	later, stopLater := w.Context(context.Background())
	defer stopLater()
	if later.Err() != nil {
		t.Fatal("a context made after the violation is ended")
	}
}
