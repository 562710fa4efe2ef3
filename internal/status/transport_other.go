//go:build !windows

package status

import (
	"errors"
	"syscall"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// tcpTransport is false: the status API is a 0600 unix socket in the state directory.
const tcpTransport = false

// transportName is the file SocketPath names: the socket.
const transportName = SocketName

// startHint is what to run when no daemon answers.
const startHint = "start it with `systemctl start runner-manager` (or `runner-manager service start`)"

// writePrivate writes an endpoint file only its owner can read (ListenTCP, which tests use here).
func writePrivate(path string, data []byte) error { return atomicfile.Write(path, data, 0o600) }

// refused reports a connection nobody accepts: the daemon is gone.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
