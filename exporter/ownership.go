package exporter

import "time"

// The ownership clock: how long jetlake may act on messages it holds
// before the server could redeliver them to another consumer, and when it
// renews that time with InProgress. Every rule that depends on AckWait is
// here.

// ownedUntil returns until when messages whose AckWait clock (re)started
// at progress are surely not redelivered: AckWait after progress, less a
// tenth for the time a delivery or an InProgress spends on the way.
func ownedUntil(progress time.Time, ackWait time.Duration) time.Time {
	return progress.Add(ackWait - ackWait/10)
}

// queuedRenewDue reports whether the messages of a batch waiting in the
// queue, whose clock started at progress, are due an InProgress at now: a
// third of AckWait has passed.
func queuedRenewDue(progress, now time.Time, ackWait time.Duration) bool {
	return now.Sub(progress) >= ackWait/3
}

// uploadRenewAt is when batchSteps renews the clock of the batch it
// stores, started at progress: two thirds of AckWait on. Its retries wait
// no longer than that.
func uploadRenewAt(progress time.Time, ackWait time.Duration) time.Time {
	return progress.Add(ackWait * 2 / 3)
}

// tooLittleLeft reports whether left, the time until ownedUntil, is too
// short for one more attempt: under a second, or a tenth of AckWait if
// that is shorter. The batch is then abandoned.
func tooLittleLeft(left, ackWait time.Duration) bool {
	return left < min(time.Second, ackWait/10)
}

// attemptTimeout bounds one PutObject call so that InProgress can be sent
// in time even when the store stalls.
func attemptTimeout(ackWait time.Duration) time.Duration {
	return min(max(ackWait/3, 5*time.Second), 5*time.Minute)
}
