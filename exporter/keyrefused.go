package exporter

import (
	"context"
	"errors"
	"time"

	"github.com/jetlake/jetlake/internal/objstore"
)

// A key the store refuses (a segment longer than the 255 bytes MinIO
// takes, a key longer than 1024 bytes) would be refused again on every
// retry, and its batch's messages would hold max_ack_pending for ever:
// twenty such messages stopped a stream. Its messages are poison for that
// key, not for the stream: the batch is given up, they are asked back
// (a NAK), and when they come they are rejected, with the refusal as the
// reason, into an object under _jetlake/rejected/, whose key jetlake
// builds from its own names. They are acked once it is stored.

// nakBody asks the server to redeliver a message at once.
var nakBody = []byte("-NAK")

// keyRefused gives up a batch whose key the store refused: its intent is
// gone (the store holds no object at a key it refuses), and each message
// is marked, then asked back, so that the loop rejects it when it comes.
func (s *streamWriter) keyRefused(b *msgBatch, ke *objstore.KeyError) {
	if s.refused == nil {
		s.refused = make(map[uint64]error, len(b.Items))
	}
	for _, it := range b.Items {
		s.refused[it.Seq] = ke
	}
	s.log.Warn("the store refuses the key of a batch; its messages are rejected when they come back",
		"stream", s.cfg.Stream, "key", ke.Key, "messages", b.Len(), "first_seq", b.First, "last_seq", b.Last, "error", ke.Err)
	if s.mode.AckLess {
		return // the consumer is moved back to them (runner.finish)
	}
	for _, it := range b.Items {
		// Without the NAK they come back after AckWait.
		_ = s.sn.acks.Publish(string(it.Handle), nakBody)
	}
}

// takeRefused returns, once, the refusal of the key of the batch that
// held the message of sequence seq, or nil.
func (s *streamWriter) takeRefused(seq uint64) error {
	ke, ok := s.refused[seq]
	if !ok {
		return nil
	}
	delete(s.refused, seq)
	return ke
}

// forgetRefused deletes the intent of a batch whose key the store
// refused: no object can be at that key, so recovery has nothing to find.
func (e *session) forgetRefused(ctx context.Context, res *result) {
	if e.intents == nil || res.intentKey == "" {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := e.intents.Delete(fctx, res.intentKey); err != nil {
		e.log.Warn("could not delete the intent of a batch whose key the store refuses", "key", res.key, "intent", res.intentKey, "error", err)
		return
	}
	res.intentKey = ""
}

// keyError returns the *objstore.KeyError err holds, or nil.
func keyError(err error) *objstore.KeyError {
	var ke *objstore.KeyError
	if errors.As(err, &ke) {
		return ke
	}
	return nil
}
