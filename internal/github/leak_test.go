package github

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/github/auth"
)

// TestNoSecretInLogsOrErrors runs every credential kind through successes and every fault kind
// with debug logging on, then checks that no token, JWT, private key or JIT config appears in
// any log line or error string.
func TestNoSecretInLogsOrErrors(t *testing.T) {
	s := newSimOpts(t, ghsim.Options{RefreshTokenTTL: 9 * time.Hour})
	ctx := context.Background()
	var errs []string
	note := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	secrets := []string{s.token}

	// GitHub App first: its JWTs are signed on the wall clock, which the fake clock leaves behind.
	s.installApp("acme")
	app, pemKey := s.appClient(0)
	secrets = append(secrets, pemKey, base64.StdEncoding.EncodeToString(appKey(t).N.Bytes())[:40])
	s.srv.AddFault(ghsim.Fault{Path: "/installation/repositories", Kind: ghsim.FaultRevokedToken, Count: 1})
	_, err := app.QueuedJobs(ctx, OrgScope("acme"), []string{"linux"})
	note(err)
	ojit, err := app.GenerateJITConfig(ctx, OrgScope("acme"), "runner-manager-3", []string{"linux"}, 0, "")
	note(err)
	secrets = append(secrets, ojit.Encoded)
	_, err = app.ListRunners(ctx, Scope{Owner: "nobody", Repo: "x"})
	note(err)

	// Token file, through every fault kind.
	c, _ := s.tokenClient(s.token)
	for _, f := range []ghsim.Fault{
		{Path: runsPath, Kind: ghsim.FaultStatus, Status: 500},
		{Path: runsPath, Kind: ghsim.FaultConnectionReset},
		{Path: runsPath, Kind: ghsim.FaultRateLimited, RetryAfter: time.Minute},
		{Path: runsPath, Kind: ghsim.FaultSecondary, RetryAfter: time.Minute},
		{Path: runsPath, Kind: ghsim.FaultBudgetExhausted, RetryAfter: time.Minute},
		{Path: runsPath, Kind: ghsim.FaultRevokedToken},
	} {
		id := s.srv.AddFault(f)
		_, err := c.QueuedJobs(ctx, repoScope, []string{"linux"})
		note(err)
		s.srv.RemoveFault(id)
		s.clock.Advance(2 * time.Minute)
	}
	var jit JITConfig
	jit, err = c.GenerateJITConfig(ctx, repoScope, "runner-manager-1", []string{"linux"}, 0, "")
	note(err)
	secrets = append(secrets, jit.Encoded)
	s.logger.Info("registered", "jit", jit)
	noAdmin := s.srv.AddToken(ghsim.TokenOptions{NoAdmin: true})
	secrets = append(secrets, noAdmin)
	na, _ := s.tokenClient(noAdmin)
	_, err = na.GenerateJITConfig(ctx, repoScope, "runner-manager-2", []string{"linux"}, 0, "")
	note(err)
	s.srv.RevokeToken(s.token)
	_, err = c.ListRunners(ctx, repoScope)
	note(err)

	// Device flow: sign-in, renewal, death, sign-in again.
	dir := t.TempDir()
	first := s.signIn(dir)
	secrets = append(secrets, first.AccessToken, first.RefreshToken)
	dc := s.deviceClient(dir)
	s.clock.Advance(7*time.Hour + 50*time.Minute)
	_, err = dc.ListRunners(ctx, repoScope)
	note(err)
	renewed, _ := auth.NewStore(dir).Load()
	secrets = append(secrets, renewed.AccessToken, renewed.RefreshToken)
	s.clock.Advance(20 * time.Hour)
	_, err = dc.ListRunners(ctx, repoScope)
	note(err)
	st, err := SignInStatus(ctx, deviceConfig(s), dir, SignInOptions{Clock: s.clock})
	note(err)
	note(st.Check)

	if len(errs) < 8 {
		t.Fatalf("scenario produced only %d errors; it no longer exercises the failure paths: %q", len(errs), errs)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "renewed GitHub sign-in") || !strings.Contains(logs, "retrying") {
		t.Fatalf("scenario logs miss renewal or retry lines:\n%s", logs)
	}
	haystack := logs + "\n" + strings.Join(errs, "\n")
	for _, marker := range []string{"ghp_", "ghs_", "ghu_", "ghr_", "eyJ", "PRIVATE KEY"} {
		if strings.Contains(haystack, marker) {
			t.Errorf("a secret-looking %q appears in logs or errors", marker)
		}
	}
	for _, sec := range secrets {
		if sec == "" {
			t.Fatalf("scenario lost a secret it should have produced; errors: %q", errs)
		}
		if strings.Contains(haystack, sec) {
			t.Errorf("secret %.6s... appears in logs or errors", sec)
		}
	}
	if t.Failed() {
		t.Logf("logs:\n%s\nerrors:\n%s", logs, strings.Join(errs, "\n"))
	}
}
