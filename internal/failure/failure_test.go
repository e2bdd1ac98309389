package failure_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jetlake/jetlake/internal/failure"
)

func TestAKindKeepsTheMessageAndTheChainOfWhatItWraps(t *testing.T) {
	cause := fmt.Errorf("put k: %w", io.ErrUnexpectedEOF)
	for _, err := range []error{
		&failure.Permanent{Code: "AccessDenied", Err: cause},
		&failure.Throttled{Err: cause},
		&failure.ServerFault{Err: cause},
	} {
		if err.Error() != cause.Error() {
			t.Errorf("%T says %q, want %q", err, err, cause)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%T does not wrap its error", err)
		}
	}
}

func TestIsPermanentLooksThroughWrapping(t *testing.T) {
	perm := &failure.Permanent{Code: "NoSuchBucket", Err: errors.New("no bucket")}
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("connection refused"), false},
		{&failure.Throttled{Err: errors.New("SlowDown")}, false},
		{perm, true},
		{fmt.Errorf("check bucket: %w", perm), true},
		{&failure.ServerFault{Err: perm}, true},
	}
	for _, tt := range tests {
		if got := failure.IsPermanent(tt.err); got != tt.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	var p *failure.Permanent
	if err := fmt.Errorf("check bucket: %w", perm); !errors.As(err, &p) || p.Code != "NoSuchBucket" {
		t.Errorf("errors.As found %+v, want the code NoSuchBucket", p)
	}
}
