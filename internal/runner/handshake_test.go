package runner

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// Where pipes have no deadlines (Windows), the handshake is bounded by closing them: a read
// blocked on a silent shim ends when the caller gives up, and reads as "no answer", like a
// deadline on Unix.
func TestBoundByCloseEndsABlockedRead(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	stop := boundByClose(ctx, time.Now().Add(time.Hour), []*os.File{r})
	defer stop()
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(r)
		read <- err
	}()
	cancel()
	err = <-read
	if !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read ended with %v, want os.ErrClosed", err)
	}
	l := &Launcher{timeout: 15 * time.Second}
	if got := l.handshakeErr(context.Background(), "wait for the shim to confirm", err).Error(); !strings.Contains(got, "no answer within 15s") {
		t.Errorf("handshake error %q, want it to say the shim did not answer in time", got)
	}
}
