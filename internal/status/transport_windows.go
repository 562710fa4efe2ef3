//go:build windows

package status

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// tcpTransport is true: Windows serves status on loopback TCP with the token of the endpoint file.
const tcpTransport = true

// transportName is the file SocketPath names: the endpoint file.
const transportName = EndpointName

// startHint is what to run when no daemon answers.
const startHint = "start it with `runner-manager service start`"

// privateSDDL gives full control to LocalSystem, the Administrators and %s (the daemon's own
// account), and to nobody else: P protects the DACL from the state directory's inherited entries.
const privateSDDL = "D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;%s)"

// writePrivate writes path with a DACL that only the daemon's account and Administrators pass:
// written aside, then renamed over path (the file keeps its own DACL across the rename).
func writePrivate(path string, data []byte) error {
	tok, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return fmt.Errorf("reading the daemon's account: %w", err)
	}
	sd, err := windows.SecurityDescriptorFromString(fmt.Sprintf(privateSDDL, tok.User.Sid.String()))
	if err != nil {
		return err
	}
	tmp := path + ".new"
	name, err := windows.UTF16PtrFromString(tmp)
	if err != nil {
		return err
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	h, err := windows.CreateFile(name, windows.GENERIC_WRITE, 0, sa, windows.CREATE_ALWAYS, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	f := os.NewFile(uintptr(h), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// refused reports a connection nobody accepts: the daemon is gone.
func refused(err error) bool {
	return errors.Is(err, windows.WSAECONNREFUSED) || errors.Is(err, syscall.ECONNREFUSED)
}
