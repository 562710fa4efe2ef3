package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/runner-manager/runner-manager/internal/httpserve"
)

// Path is where the scrape endpoint is served.
const Path = "/metrics"

// Handler serves a scrape of the registry (text or OpenMetrics, as the scraper asks).
// A collection error is served as HTTP 500 so a broken collector is noticed, not hidden.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.HTTPErrorOnError,
		Registry:          m.reg, // exports promhttp_metric_handler_errors_total
		EnableOpenMetrics: true,
		Timeout:           10 * time.Second,
	})
}

// Serve listens on addr (daemon.metrics_listen, for example "127.0.0.1:9464") and serves
// Path until ctx is cancelled. It returns nil after a clean shutdown.
func (m *Metrics) Serve(ctx context.Context, addr string, log *slog.Logger) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %s (daemon.metrics_listen): %w; choose a free address or leave it empty to turn metrics off", addr, err)
	}
	return m.ServeListener(ctx, ln, log)
}

// ServeListener serves Path on ln until ctx is cancelled, then shuts down within 5 s. It owns
// ln and closes it. Tests pass a 127.0.0.1:0 listener.
func (m *Metrics) ServeListener(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, m.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving metrics", "addr", ln.Addr().String(), "path", Path)
	return httpserve.Serve(ctx, "metrics", srv, ln)
}
