package exporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/jsclient"
	"github.com/jetlake/jetlake/exporter/objstore"
)

// errFenced ends the store of a batch of a pinned consumer (failover =
// "pinned", and every partition) that this instance is no longer pinned
// to: its messages are another instance's now.
var errFenced = errors.New("this instance is no longer pinned to the consumer: the batch is left to the instance pinned now")

// checkPin fences the store of a batch of s sealed while this instance was
// pinned with pin: it asks the consumer's leader which client is pinned,
// and returns errFenced when it is not pin.
//
// Messages sent into a link that froze reach the instance when the link
// thaws, and their AckWait counts, for it, from then: meanwhile the server
// may have moved the pin and redelivered them to the instance pinned now,
// which stores them too. Asked after the batch's intent is recorded and
// within the upload attempt, the pin closes that window: an instance
// pinned after this check recovers the intent (pinned first, it lists the
// intents after) and waits for the attempt to end before it looks for the
// object; one pinned before makes the check fail.
func (e *Exporter) checkPin(ctx context.Context, s *streamState, pin string) error {
	if s.cfg.Failover != config.FailoverPinned || e.js == nil {
		return nil
	}
	pinned, err := jsclient.Pinned(ctx, e.js, s.cfg.Stream, s.cfg.Consumer)
	if err != nil {
		return fmt.Errorf("which instance is pinned: %w", err)
	}
	if pin == "" || pinned != pin {
		return fmt.Errorf("%w (pinned when sealed %q, now %q)", errFenced, pin, pinned)
	}
	return nil
}

// forgetFenced deletes the intent (id) of a batch its fence stopped, when
// its object is not stored: the instance pinned now took over before the
// intent was written, so no recovery will ever look at it, and it would
// stay in the state bucket for good. The key may hold the object the
// instance pinned now stored there, under its own intent. An intent whose
// object is there (an earlier attempt passed the fence and was stored) is
// left to the instance pinned now, which found it when it took over.
func (e *Exporter) forgetFenced(ctx context.Context, res *result, id string) {
	if e.intents == nil {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	md, err := e.store.Head(fctx, res.key)
	if err == nil && md[objstore.MetaIntent] == id || err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return
	}
	if err := e.intents.Delete(fctx, res.intentKey); err != nil {
		e.log.Warn("could not delete the intent of a fenced batch", "key", res.key, "intent", res.intentKey, "error", err)
		return
	}
	res.intentKey = ""
}
