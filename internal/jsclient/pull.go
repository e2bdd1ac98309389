package jsclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// PinHeader carries, on a message of a consumer with the pinned_client
// priority policy, the id of the client the server pinned.
const PinHeader = "Nats-Pin-Id"

// ServerPin returns the pin id the server set on a message of a pinned
// consumer: the header's last value. The server appends its own after the
// headers the message was published with, and whoever published it may
// have set Nats-Pin-Id too, with any number of values.
func ServerPin(h nats.Header) string {
	if v := h[PinHeader]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// PullOptions are the limits of the pull requests of Pull, and the
// priority group they ask in.
type PullOptions struct {
	Batch    int           // messages a request asks for at most
	MaxBytes int           // bytes a request asks for at most
	Expires  time.Duration // how long a request waits on the server
	// Group is the consumer's priority group with the pinned_client
	// policy (PriorityGroup), or "" for a consumer without one: its
	// requests then never carry a pin id.
	Group string
}

// Pull pulls consumer, of stream, the way jetstream's Consume does with
// PullMaxMessagesWithBytesLimit, PullExpiry and PullPriorityGroup: handle
// is called for every message, one at a time, and a slow handle holds
// back the requests that follow; errs is told of every problem (an error
// jetstream names: ErrPinIDMismatch when another client is pinned,
// ErrConsumerLeadershipChanged, ErrNoHeartbeat, ErrConsumerDeleted and
// ErrBadRequest, after which the pulls end).
//
// Unlike Consume, it sends with its requests only the pin the server set,
// and only in a priority group: the last value of a message's Nats-Pin-Id
// header (ServerPin). Consume keeps the first value of any message's
// header, which is the publisher's when the message was published with
// one, and sends it with its next request whatever the consumer. A pinned
// consumer refuses the forged id (423) and, pinned to nobody the client
// can name, delivers nothing more until its pinned TTL ends; a consumer
// without a priority group refuses any id (400), and Consume ends.
func Pull(js jetstream.JetStream, stream, consumer string, o PullOptions, handle func(jetstream.Msg), errs func(error)) (jetstream.ConsumeContext, error) {
	if o.Batch < 1 || o.Expires < time.Second {
		return nil, fmt.Errorf("jsclient: pull: batch %d, expires %s: want at least 1 and 1s", o.Batch, o.Expires)
	}
	nc := js.Conn()
	p := &pulls{
		nc:      nc,
		subject: apiPrefix(js.Options()) + "CONSUMER.MSG.NEXT." + stream + "." + consumer,
		o:       o,
		hb:      min(o.Expires/2, 30*time.Second),
		handle:  handle,
		errs:    errs,
		closed:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	sub, err := nc.Subscribe(nc.NewInbox(), p.receive)
	if err != nil {
		return nil, fmt.Errorf("jsclient: pull: %w", err)
	}
	sub.SetClosedHandler(func(string) { close(p.closed) })
	p.sub = sub
	status := nc.StatusChanged(nats.RECONNECTING, nats.CONNECTED)
	p.mu.Lock()
	p.heard = time.Now()
	p.refill()
	p.mu.Unlock()
	go p.watch(status)
	return p, nil
}

// apiPrefix is the prefix of the JetStream API subjects, as jetstream
// builds it from the context's options.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "" && !strings.HasSuffix(o.APIPrefix, "."):
		return o.APIPrefix + "."
	case o.APIPrefix != "":
		return o.APIPrefix
	}
	return "$JS.API."
}

// pulls is a Pull under way.
type pulls struct {
	nc      *nats.Conn
	subject string
	o       PullOptions
	hb      time.Duration // the idle heartbeat asked of the server
	handle  func(jetstream.Msg)
	errs    func(error)
	sub     *nats.Subscription
	closed  chan struct{} // closed when the subscription is
	done    chan struct{} // closed by Stop or Drain
	ending  sync.Once

	mu      sync.Mutex
	pin     string    // the server's pin on the last message; "" after a 423
	pending int       // messages the requests sent may still deliver
	heard   time.Time // when the server was last heard from
	busy    bool      // handle is running: the server is not silent, the handler is slow
	ended   bool      // Stop or Drain: no more requests
}

// pullRequest is the body of a CONSUMER.MSG.NEXT request.
type pullRequest struct {
	Batch     int           `json:"batch"`
	MaxBytes  int           `json:"max_bytes,omitempty"`
	Expires   time.Duration `json:"expires"`
	Heartbeat time.Duration `json:"idle_heartbeat,omitempty"`
	Group     string        `json:"group,omitempty"`
	PinID     string        `json:"id,omitempty"`
}

// refill asks for more once the requests sent may deliver less than half
// a batch: as many as make a batch again. p.mu is held.
func (p *pulls) refill() {
	if p.ended || p.pending >= (p.o.Batch+1)/2 {
		return
	}
	body, err := json.Marshal(pullRequest{
		Batch: p.o.Batch - p.pending, MaxBytes: p.o.MaxBytes, Expires: p.o.Expires, Heartbeat: p.hb,
		Group: p.o.Group, PinID: p.pin,
	})
	if err == nil {
		err = p.nc.PublishRequest(p.subject, p.sub.Subject, body)
	}
	if err != nil {
		// Asked again when the heartbeats are missed.
		go p.errs(fmt.Errorf("jsclient: pull request: %w", err))
		return
	}
	p.pending = p.o.Batch
}

// receive takes what the server sends to the requests' inbox: a message,
// or a status (a heartbeat, or the end of a request).
func (p *pulls) receive(m *nats.Msg) {
	status := ""
	if len(m.Data) == 0 && len(m.Header) > 0 {
		status = m.Header.Get("Status")
	}
	if status == "" {
		p.mu.Lock()
		if pin := ServerPin(m.Header); pin != "" && p.o.Group != "" {
			p.pin = pin
		}
		p.busy = true
		p.mu.Unlock()
		p.handle(pulledMsg{m, p.nc})
		p.mu.Lock()
		p.busy = false
		p.heard = time.Now()
		p.pending--
		p.refill()
		p.mu.Unlock()
		return
	}
	descr := m.Header.Get("Description")
	var report, end error
	p.mu.Lock()
	p.heard = time.Now()
	switch lower := strings.ToLower(descr); {
	case status == "100":
		// An idle heartbeat.
	case status == "404" || status == "408" ||
		status == "409" && (strings.Contains(lower, "message size exceeds maxbytes") || strings.Contains(lower, "batch completed")):
		// A request ended: what it would still have delivered will not
		// come.
		left, _ := strconv.Atoi(m.Header.Get("Nats-Pending-Messages"))
		p.pending = max(p.pending-left, 0)
	case status == "423":
		// Another client is pinned: ask without an id, which the server
		// keeps until nobody is pinned.
		p.pin, p.pending = "", 0
		report = jetstream.ErrPinIDMismatch
	case status == "409" && strings.Contains(lower, "leadership change"):
		p.pending = 0
		report = jetstream.ErrConsumerLeadershipChanged
	case status == "409" && strings.Contains(lower, "consumer deleted"):
		end = jetstream.ErrConsumerDeleted
	case status == "400":
		end = fmt.Errorf("%w: %s", jetstream.ErrBadRequest, descr)
	default:
		report = fmt.Errorf("jsclient: pull: status %s %s", status, descr)
	}
	if end == nil {
		p.refill()
	}
	p.mu.Unlock()
	if report != nil {
		p.errs(report)
	}
	if end != nil {
		p.errs(end)
		p.Stop()
	}
}

// watch asks again when the server has been silent for two heartbeats
// (a request lost with a connection or a leader) and after a reconnect.
func (p *pulls) watch(status chan nats.Status) {
	defer p.nc.RemoveStatusListener(status)
	t := time.NewTicker(p.hb / 2)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case s := <-status:
			if s != nats.CONNECTED {
				continue
			}
			p.mu.Lock()
			p.pending, p.heard = 0, time.Now()
			p.refill()
			p.mu.Unlock()
		case now := <-t.C:
			p.mu.Lock()
			missed := !p.busy && !p.ended && now.Sub(p.heard) > 2*p.hb
			if missed {
				p.pending, p.heard = 0, now
				p.refill()
			}
			p.mu.Unlock()
			if missed {
				p.errs(jetstream.ErrNoHeartbeat)
			}
		}
	}
}

// Stop ends the pulls at once; messages received and not handled yet are
// dropped (the server sends them again after AckWait).
func (p *pulls) Stop() {
	p.end()
	_ = p.sub.Unsubscribe()
}

// Drain ends the pulls once the messages received are handled.
func (p *pulls) Drain() {
	p.end()
	_ = p.sub.Drain()
}

// Closed is closed once the pulls have ended.
func (p *pulls) Closed() <-chan struct{} { return p.closed }

func (p *pulls) end() {
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
	p.ending.Do(func() { close(p.done) })
}

// pulledMsg is a message Pull received: a jetstream.Msg whose acks
// are published on the connection it came by, as jetstream's are.
type pulledMsg struct {
	m  *nats.Msg
	nc *nats.Conn
}

func (m pulledMsg) Data() []byte         { return m.m.Data }
func (m pulledMsg) Headers() nats.Header { return m.m.Header }
func (m pulledMsg) Subject() string      { return m.m.Subject }
func (m pulledMsg) Reply() string        { return m.m.Reply }

// Metadata reads the message's JetStream metadata from its reply subject.
func (m pulledMsg) Metadata() (*jetstream.MsgMetadata, error) {
	tok := strings.Split(m.m.Reply, ".")
	var md jetstream.MsgMetadata
	var nums []string
	switch {
	case len(tok) == 9 && tok[0] == "$JS" && tok[1] == "ACK":
		md.Stream, md.Consumer, nums = tok[2], tok[3], tok[4:9]
	case len(tok) >= 11 && tok[0] == "$JS" && tok[1] == "ACK":
		if tok[2] != "_" {
			md.Domain = tok[2]
		}
		md.Stream, md.Consumer, nums = tok[4], tok[5], tok[6:11]
	default:
		return nil, jetstream.ErrNotJSMessage
	}
	var v [5]uint64
	for i, s := range nums {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: reply %q", jetstream.ErrNotJSMessage, m.m.Reply)
		}
		v[i] = n
	}
	md.NumDelivered, md.Sequence.Stream, md.Sequence.Consumer = v[0], v[1], v[2]
	md.Timestamp, md.NumPending = time.Unix(0, int64(v[3])), v[4]
	return &md, nil
}

func (m pulledMsg) ack(body string) error {
	if m.m.Reply == "" {
		return jetstream.ErrMsgNoReply
	}
	return m.nc.Publish(m.m.Reply, []byte(body))
}

func (m pulledMsg) Ack() error        { return m.ack("+ACK") }
func (m pulledMsg) Nak() error        { return m.ack("-NAK") }
func (m pulledMsg) InProgress() error { return m.ack("+WPI") }
func (m pulledMsg) Term() error       { return m.ack("+TERM") }
func (m pulledMsg) TermWithReason(reason string) error {
	return m.ack("+TERM " + reason)
}

func (m pulledMsg) NakWithDelay(delay time.Duration) error {
	if delay <= 0 {
		return m.Nak()
	}
	return m.ack(fmt.Sprintf(`-NAK {"delay": %d}`, delay.Nanoseconds()))
}

// DoubleAck acks the message and waits for the server to confirm it.
func (m pulledMsg) DoubleAck(ctx context.Context) error {
	if m.m.Reply == "" {
		return jetstream.ErrMsgNoReply
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	_, err := m.nc.RequestWithContext(ctx, m.m.Reply, []byte("+ACK"))
	return err
}

var (
	_ jetstream.Msg            = pulledMsg{}
	_ jetstream.ConsumeContext = (*pulls)(nil)
)
