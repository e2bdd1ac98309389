package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// readiness is what /readyz asks.
type readiness interface {
	Ready() error
}

// idler is what /readyz asks of a ready connector that may have nothing to
// do: it says why, or "".
type idler interface {
	Idle() string
}

// serveMetrics serves /metrics (with the metrics handler), /healthz and
// /readyz on addr until ctx ends. It returns once the listener is bound, so
// a bad address fails the start.
func serveMetrics(ctx context.Context, addr string, metrics http.Handler, exps []readiness, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		var problems []string
		for _, e := range exps {
			if err := e.Ready(); err != nil {
				problems = append(problems, err.Error())
			}
		}
		if len(problems) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, strings.Join(problems, "\n"))
			return
		}
		fmt.Fprintln(w, "ready")
		// Ready, but with nothing to do: every partition is another
		// instance's.
		for _, e := range exps {
			if i, ok := e.(idler); ok {
				if why := i.Idle(); why != "" {
					fmt.Fprintln(w, why)
				}
			}
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	logServing(log, ln.Addr())
	return nil
}

// logServing says where the metrics are served, with a warning when that is
// more than the loopback interface: the endpoints have no authentication.
func logServing(log *slog.Logger, addr net.Addr) {
	if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		log.Warn("metrics, health and readiness are served beyond loopback, without authentication; bind 127.0.0.1, or put a firewall or proxy in front",
			"addr", addr.String())
		return
	}
	log.Info("serving metrics", "addr", addr.String())
}
