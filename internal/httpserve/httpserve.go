// Package httpserve runs an *http.Server on a listener for as long as a context lives, then shuts
// it down gracefully, and gives every server of the daemon the timeouts it did not set itself, so
// no endpoint lets a client hold a connection (and a descriptor) open for ever. Handlers and logging
// stay with the caller.
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

// Timeouts given to a server that leaves them zero. A client that connects and sends nothing is
// dropped after DefaultReadHeaderTimeout; a kept-alive connection with no request after DefaultIdleTimeout.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
)

// Serve serves srv on ln until ctx ends, then shuts srv down within ShutdownGrace. It returns nil
// after a clean shutdown and the serving error otherwise, prefixed with what (e.g. "metrics").
// Timeouts srv leaves zero get the defaults above.
func Serve(ctx context.Context, what string, srv *http.Server, ln net.Listener) error {
	withTimeouts(srv)
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

func withTimeouts(srv *http.Server) {
	for _, t := range []struct {
		d   *time.Duration
		def time.Duration
	}{
		{&srv.ReadHeaderTimeout, DefaultReadHeaderTimeout},
		{&srv.ReadTimeout, DefaultReadTimeout},
		{&srv.WriteTimeout, DefaultWriteTimeout},
		{&srv.IdleTimeout, DefaultIdleTimeout},
	} {
		if *t.d <= 0 {
			*t.d = t.def
		}
	}
}
