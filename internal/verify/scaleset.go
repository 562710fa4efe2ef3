package verify

import (
	"context"
	"net/http"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/github/auth"
	"github.com/runner-manager/runner-manager/internal/scaleset"
)

// ActionsService looks scale sets up in GitHub's Actions service (internal/scaleset), as the
// daemon's listener finds them at start. It mints one registration token per target: the only
// write verify makes, and it registers nothing.
type ActionsService struct {
	APIURL    string // github.api_url; "" = https://api.github.com
	Tokens    scaleset.RegistrationTokens
	Transport http.RoundTripper
}

// Find implements ScaleSets.
func (a ActionsService) Find(ctx context.Context, t config.Target) (int64, bool, error) {
	web, err := auth.WebURLFor(a.APIURL)
	if err != nil {
		return 0, false, err
	}
	sc, err := github.ScopeOf(t)
	if err != nil {
		return 0, false, err
	}
	c, err := scaleset.New(scaleset.Options{APIURL: a.APIURL, WebURL: web, Scope: sc.String(), Tokens: a.Tokens, Transport: a.Transport, UserAgent: "runner-manager (verify)"})
	if err != nil {
		return 0, false, err
	}
	gid, err := c.RunnerGroupID(ctx, t.RunnerGroup)
	if err != nil {
		return 0, false, err
	}
	s, found, err := c.ScaleSetByName(ctx, gid, t.ScaleSet)
	return s.ID, found, err
}
