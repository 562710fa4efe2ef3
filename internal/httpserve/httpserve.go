// Package httpserve runs an *http.Server on a listener for as long as a context lives, then shuts
// it down gracefully. It owns nothing else: handlers, timeouts and logging stay with the caller.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ShutdownGrace bounds how long in-flight requests may finish once ctx ends.
const ShutdownGrace = 5 * time.Second

// Serve serves srv on ln until ctx ends, then shuts srv down within ShutdownGrace. It returns nil
// after a clean shutdown and the serving error otherwise, prefixed with what (e.g. "metrics").
func Serve(ctx context.Context, what string, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("%s: serving on %s: %w", what, ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("%s: shutting down the server on %s: %w", what, ln.Addr(), err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: serving on %s: %w", what, ln.Addr(), err)
	}
	return nil
}
