package enginetest

import (
	"context"
	"sync"
)

// WaitCond waits on c until done holds or ctx ends, and returns ctx's error if done never held.
// done runs with c.L held; the caller must not hold it. The fakes wake their waiters with
// c.Broadcast whenever what done reads changes; WaitCond wakes them once more when ctx ends, so a
// waiter never outlives its deadline.
func WaitCond(ctx context.Context, c *sync.Cond, done func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		c.L.Lock()
		c.Broadcast()
		c.L.Unlock()
	})
	defer stop()
	c.L.Lock()
	defer c.L.Unlock()
	for !done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.Wait()
	}
	return nil
}
