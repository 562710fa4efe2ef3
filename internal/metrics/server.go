package metrics

import (
	"context"
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

// ServeListener serves Path on ln until ctx is cancelled, then shuts down within 5 s. It owns
// ln and closes it. Tests pass a 127.0.0.1:0 listener.
func (m *Metrics) ServeListener(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, m.Handler())
	// httpserve gives the header and write timeouts (5 s, 30 s); a scrape sends no body.
	srv := &http.Server{
		Handler:     mux,
		ReadTimeout: 10 * time.Second,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving metrics", "addr", ln.Addr().String(), "path", Path)
	return httpserve.Serve(ctx, "metrics", srv, ln)
}
