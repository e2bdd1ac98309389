package exportertest

import (
	"fmt"
	"net"
	"sync"
)

// Link is a TCP relay on a loopback port in front of a server, which a test
// can freeze: while frozen, connections stay open but no byte crosses in
// either direction, as on a network link that silently stops. Freezing
// tests what neither a closed connection nor a stopped server shows: a peer
// that is there and does not answer.
type Link struct {
	// Addr is the relay's host:port; clients connect here.
	Addr string

	target string
	ln     net.Listener

	mu     sync.Mutex
	thawed *sync.Cond
	frozen bool
	closed bool
	conns  map[net.Conn]bool
}

// StartLink relays connections to target ("127.0.0.1:4222") through a new
// loopback port.
func StartLink(target string) (*Link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("exportertest: link to %s: %w", target, err)
	}
	l := &Link{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	l.thawed = sync.NewCond(&l.mu)
	go l.accept()
	return l, nil
}

// NewLink starts a Link to target for t and closes it when t ends.
func NewLink(t TB, target string) *Link {
	t.Helper()
	l, err := StartLink(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// Freeze stops every byte on the link, on open and new connections alike,
// until Thaw.
func (l *Link) Freeze() {
	l.mu.Lock()
	l.frozen = true
	l.mu.Unlock()
}

// Thaw lets bytes through again; what was held is delivered.
func (l *Link) Thaw() {
	l.mu.Lock()
	l.frozen = false
	l.mu.Unlock()
	l.thawed.Broadcast()
}

// Close stops accepting and closes every relayed connection.
func (l *Link) Close() {
	l.mu.Lock()
	l.closed = true
	l.frozen = false
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.thawed.Broadcast()
	l.ln.Close()
}

func (l *Link) accept() {
	for {
		client, err := l.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", l.target)
		if err != nil {
			client.Close()
			continue
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		l.conns[client], l.conns[server] = true, true
		l.mu.Unlock()
		go l.relay(client, server)
		go l.relay(server, client)
	}
}

// relay copies from src to dst, holding each chunk while the link is
// frozen, and closes both ends when either side ends.
func (l *Link) relay(dst, src net.Conn) {
	defer func() {
		l.mu.Lock()
		delete(l.conns, dst)
		delete(l.conns, src)
		l.mu.Unlock()
		dst.Close()
		src.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.mu.Lock()
			for l.frozen {
				l.thawed.Wait()
			}
			closed := l.closed
			l.mu.Unlock()
			if closed {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
