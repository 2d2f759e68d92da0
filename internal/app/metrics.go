package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveMetrics serves /metrics, /healthz (the process answers) and /readyz (the
// database answers and, with a relay, Kafka does) on addr.
func (a *App) serveMetrics(addr string) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", a.readyz)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return configErrorf("--metrics-addr %s: %v", addr, err)
	}
	a.addr = l.Addr()
	a.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := a.metrics.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("metrics server stopped", "err", err)
		}
	}()
	a.log.Info("serving metrics", "addr", a.addr.String())
	return nil
}

func (a *App) readyz(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
	defer cancel()
	var problems []string
	if err := a.Pool.Ping(ctx); err != nil {
		problems = append(problems, "database unreachable")
	}
	if a.Relay != nil && !a.Relay.Status().BrokerReachable {
		problems = append(problems, "kafka unreachable")
	}
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, p := range problems {
			fmt.Fprintln(w, p)
		}
		return
	}
	fmt.Fprintln(w, "ready")
	// Ready all the same: this relay works; some other session holds work back.
	if a.Relay != nil {
		if n := a.Relay.Status().HeadsLocked; n > 0 {
			fmt.Fprintf(w, "waiting: %d aggregates' head event held locked by another session\n", n)
		}
	}
}
