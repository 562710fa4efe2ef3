package daemon

import (
	"context"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
)

// applier is one step of putting a config in force. One list of them (appliers) runs for the
// first load (start) and for every reload (reload), so the two cannot drift apart (Prometheus's
// reloaders). undo puts back what apply changed, given the config in force before it (nil at
// the first load); a step that cannot fail, or changes nothing an earlier refusal must restore,
// has none.
type applier struct {
	name  string
	apply func(ctx context.Context, cur *config.Config) error
	undo  func(old *config.Config)
}

// applyConfig runs steps in order for cur. When one fails, the steps before it are undone in
// reverse order with old, so a refused config changes nothing (promise 4), and its error is
// returned as it is: the step that refuses says why (TestApplyConfigUndoesTheStepsBefore).
func applyConfig(ctx context.Context, steps []applier, old, cur *config.Config) error {
	for i, s := range steps {
		if err := s.apply(ctx, cur); err != nil {
			for k := i - 1; k >= 0; k-- {
				if u := steps[k].undo; u != nil {
					u(old)
				}
			}
			return err
		}
	}
	return nil
}

// appliers is the daemon's apply sequence; rep receives the engine's report of the apply. Only
// the engine may refuse (a target the daemon cannot serve): what comes before it is undone then,
// what comes after it sees only configs the engine took. A new part that follows the config
// adds its step here.
func (d *daemon) appliers(rep *engine.Report) []applier {
	return []applier{
		{name: "github client",
			apply: func(_ context.Context, c *config.Config) error { d.gh.setConfig(c); return nil },
			undo: func(old *config.Config) {
				if old != nil {
					d.gh.setConfig(old)
				}
			}},
		// Before the engine: the loops it starts plan their first pass with the new poll plan.
		{name: "poll pacer",
			apply: func(_ context.Context, c *config.Config) error { d.pacer.set(c); return nil },
			undo:  func(old *config.Config) { d.pacer.set(old) }},
		{name: "engine",
			apply: func(ctx context.Context, c *config.Config) (err error) {
				*rep, err = d.sup.Apply(ctx, c)
				return err
			}},
		{name: "fleet targets",
			apply: func(_ context.Context, c *config.Config) error {
				if d.fleet != nil {
					d.fleet.SetTargets(c)
				}
				return nil
			}},
		{name: "scale sets", apply: func(_ context.Context, c *config.Config) error { d.sets.Apply(c); return nil }},
		{name: "last good config", apply: func(_ context.Context, c *config.Config) error {
			d.mu.Lock()
			old := d.cfg
			d.cfg = c
			d.mu.Unlock()
			if d.logs != nil && old != nil && (old.Daemon.LogLevel != c.Daemon.LogLevel || old.Daemon.LogFormat != c.Daemon.LogFormat) {
				d.logs.Set(c.Daemon.LogLevel, c.Daemon.LogFormat)
			}
			return nil
		}},
		// A removed target's series are dropped by the engine once its loop has drained (ForgetTarget).
		{name: "target metrics", apply: func(_ context.Context, c *config.Config) error {
			d.metrics.InitTargets(targetNames(c))
			return nil
		}},
	}
}
