package runner

import (
	"context"
	"os"
	"time"
)

// bound ends reads and writes on files at deadline, or when ctx ends: through the files'
// deadlines where the OS has them for pipes (Unix), else by closing the files (Windows, whose
// anonymous pipes have none; closing one cancels the I/O pending on it). A read or write it ended
// fails with os.ErrDeadlineExceeded or os.ErrClosed. Call stop once the exchange is over.
func bound(ctx context.Context, deadline time.Time, files ...*os.File) (stop func()) {
	for _, f := range files {
		if f.SetDeadline(deadline) != nil {
			return boundByClose(ctx, deadline, files)
		}
	}
	stopCtx := context.AfterFunc(ctx, func() {
		for _, f := range files {
			_ = f.SetDeadline(time.Now())
		}
	})
	return func() { stopCtx() }
}

func boundByClose(ctx context.Context, deadline time.Time, files []*os.File) func() {
	end := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	timer := time.AfterFunc(time.Until(deadline), end)
	stopCtx := context.AfterFunc(ctx, end)
	return func() {
		timer.Stop()
		stopCtx()
	}
}
