package runner

import (
	"context"
	"errors"
	"fmt"
)

// killRounds bounds killUID: each round is one kill(-1) by the helper and one process scan.
const killRounds = 50

// killUntilGone is killUID's loop, shared by Linux and macOS: kill, then look for what is left
// (pids), until a look finds nothing, at most rounds times. Kill first, then look: a scan can
// miss a fork chain between two generations, while after a kill(-1) as the uid nothing of it is
// left to be missed. A kill that fails (the helper may not start while the uid is at its process
// limit, a fork bomb) is tried again in the next round; a failed scan ends the loop.
// TestKillUntilGone.
func killUntilGone(ctx context.Context, uid uint32, rounds int, kill func(context.Context) error, pids func() ([]int, error)) error {
	if uid == 0 {
		return errors.New("refusing to kill every process of uid 0")
	}
	var last error
	for range rounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := kill(ctx); err != nil {
			last = err
			continue
		}
		left, err := pids()
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
	}
	return errors.Join(fmt.Errorf("processes of uid %d keep appearing after %d rounds of kill(-1, SIGKILL) as that uid", uid, rounds), last)
}
