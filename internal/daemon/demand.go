package daemon

import (
	"context"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/scalesetdemand"
)

// demandFor routes the engine's calls by target, the demand source the config chose: scale-set
// targets to their source (internal/scalesetdemand), the others to the REST API (polling, or
// webhook-fed). It only chooses; each source owns its rules.
type demandFor struct {
	rest *gitHub
	sets *scalesetdemand.Source
}

func (d demandFor) Queued(ctx context.Context, t config.Target) ([]engine.Job, error) {
	if t.ScaleSet != "" {
		return d.sets.Queued(ctx, t)
	}
	return d.rest.Queued(ctx, t)
}

func (d demandFor) JITConfig(ctx context.Context, t config.Target, req engine.JITRequest) (engine.Registration, error) {
	if t.ScaleSet != "" {
		return d.sets.JITConfig(ctx, t, req)
	}
	return d.rest.JITConfig(ctx, t, req)
}

func (d demandFor) Runners(ctx context.Context, t config.Target) ([]engine.Runner, error) {
	if t.ScaleSet != "" {
		return d.sets.Runners(ctx, t)
	}
	return d.rest.Runners(ctx, t)
}

func (d demandFor) DeleteRunner(ctx context.Context, t config.Target, runnerID int64) error {
	if t.ScaleSet != "" {
		return d.sets.DeleteRunner(ctx, t, runnerID)
	}
	return d.rest.DeleteRunner(ctx, t, runnerID)
}

// tokens mints registration tokens with the client the [github] section currently builds: the
// scale-set source's only use of the GitHub credential.
type tokens struct{ gh *gitHub }

func (t tokens) RegistrationToken(ctx context.Context, scope string) (string, error) {
	c, err := t.gh.get()
	if err != nil {
		return "", err
	}
	return c.RegistrationToken(ctx, scope)
}
