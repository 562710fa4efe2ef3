package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/httpserve"
)

// Server serves a Handler on webhook.listen at webhook.path. Timeouts are short because GitHub
// sends small bodies and gives up after 10 s; they stop a slow client from holding connections.
type Server struct {
	Path    string // webhook.path, e.g. "/webhook"
	Handler http.Handler
	Log     *slog.Logger // default discards
}

// Serve serves s.Path on ln until ctx is cancelled, then lets in-flight deliveries finish for up
// to 5 s. It owns ln and closes it, and returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !strings.HasPrefix(s.Path, "/") {
		ln.Close()
		return fmt.Errorf("webhook: path %q must start with /", s.Path)
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle(s.Path, s.Handler) // any method: the Handler answers 405 itself, with Allow
	// httpserve gives the 5 s header timeout; the others are tighter than its defaults (see Server).
	srv := &http.Server{
		Handler:        mux,
		ReadTimeout:    10 * time.Second,
		WriteTimeout:   10 * time.Second,
		IdleTimeout:    90 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving webhook deliveries", "addr", ln.Addr().String(), "path", s.Path)
	return httpserve.Serve(ctx, "webhook", srv, ln)
}
