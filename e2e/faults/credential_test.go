//go:build e2e

package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	ghauth "github.com/runner-manager/runner-manager/internal/github/auth"
	"github.com/runner-manager/runner-manager/internal/status"
)

// unauthorizedRetry bounds how long a target backing off for a 401 waits before it tries again
// (docs/engine.md: 30 s, +10 % jitter), plus a job's run.
const unauthorizedRetry = 33*time.Second + jobTimeout

// TestRevokedTokenFileRecoversWithoutRestart (promise 7): the token in token_file is revoked. The
// daemon keeps running, status shows the unauthorized backoff with a remedy and without the token,
// and writing a new valid token into the file makes the same process run jobs again.
func TestRevokedTokenFileRecoversWithoutRestart(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	cfg := harness.NewConfig(t, sim)
	cfg.Add(harness.RepoTarget("web", "acme/web", e2eLabels, 2))
	d := harness.StartDaemon(t, cfg.Write(t))
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond))

	old := token(t, sim)
	sim.RevokeToken(old)
	ts := waitTarget(t, d, "web", 30*time.Second, "unauthorized backoff after the token was revoked", backingOff("unauthorized"))
	if !strings.Contains(ts.LastError, sim.TokenFile) || !strings.Contains(ts.LastError, "replace the credential") {
		t.Errorf("status does not tell the operator which credential to replace: %q", ts.LastError)
	}
	pid := d.Status(t).PID

	fresh := sim.AddToken(ghsim.TokenOptions{})
	if err := os.WriteFile(sim.TokenFile, []byte(fresh+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	job := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
	sim.WaitJobsDone(t, unauthorizedRetry, job)
	waitTarget(t, d, "web", 10*time.Second, "healthy with the new token", healthy)
	if now := d.Status(t).PID; now != pid {
		t.Errorf("the daemon's pid changed from %d to %d: it restarted", pid, now)
	}
	assertNoSecret(t, d, old, fresh)
	stopClean(t, sim, d, drainBound(cfg))
}

// TestRevokedCredentialShutdownIsBounded (promise 5): with the credential revoked, an idle runner
// cannot be deregistered, and a SIGTERM still ends the daemon within shutdown_drain_timeout. The
// runner it leaves is concluded by the next start once a valid token is in place.
func TestRevokedCredentialShutdownIsBounded(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	cfg := harness.NewConfig(t, sim)
	web := harness.RepoTarget("web", "acme/web", e2eLabels, 2)
	web.MinIdle = 1
	cfg.Add(web)
	d := harness.StartDaemon(t, cfg.Write(t))
	waitTarget(t, d, "web", jobTimeout, "one idle runner", func(ts status.Target) bool { return ts.Idle == 1 })

	sim.RevokeToken(token(t, sim))
	waitTarget(t, d, "web", 30*time.Second, "unauthorized backoff after the token was revoked", backingOff("unauthorized"))
	out := stopWithin(t, d, drainBound(cfg))
	t.Logf("stop with a revoked credential: %s", strings.TrimSpace(out))

	// Recovery: a valid token and no min_idle; the next start adopts the idle runner and reaps it.
	if err := os.WriteFile(sim.TokenFile, []byte(sim.AddToken(ghsim.TokenOptions{})+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Target(t, "web").MinIdle = 0
	d2 := harness.StartDaemon(t, cfg.Write(t))
	harness.Eventually(t, 60*time.Second, "the left runner to be reaped", func() bool { return len(sim.ManagedRunners()) == 0 })
	stopWithin(t, d2, drainBound(cfg))
	harness.AssertNoLeaks(t, sim, cfg.StateDir)
}

// deviceClientID is the OAuth client the device-flow test signs in with.
const deviceClientID = "Iv1.e2e"

// TestDeviceFlowLoginRecoversDeadSignIn (promise 7): the daemon runs on a device-flow sign-in made by
// `runner-manager auth login` against the simulator. The pair is then renewed elsewhere (its
// refresh token rotated away), so the daemon's renewal is refused (bad_refresh_token) and the
// sign-in is dead: status shows the unauthorized backoff and says to run `auth login`. A second
// `auth login` on the host makes the running daemon work again without a restart.
func TestDeviceFlowLoginRecoversDeadSignIn(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.SimOptions{Repos: []string{"acme/web"}})
	sim.CreateOAuthClient(deviceClientID)
	cfg := harness.NewConfig(t, sim)
	cfg.File.GitHub = config.GitHub{APIURL: sim.URL(), DeviceFlow: &config.DeviceFlow{ClientID: deviceClientID}}
	cfg.Add(harness.RepoTarget("web", "acme/web", e2eLabels, 2))
	path := cfg.Write(t)

	authLogin(t, sim, path)
	d := harness.StartDaemon(t, path)
	sim.WaitJobsDone(t, jobTimeout, sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond))
	pid := d.Status(t).PID

	store := ghauth.NewStore(cfg.StateDir)
	first, err := store.Load()
	if err != nil {
		t.Fatalf("load the sign-in: %v", err)
	}
	renewElsewhere(t, sim, first.RefreshToken)
	job := sim.MustQueue(t, "acme/web", e2eLabels, 200*time.Millisecond)
	ts := waitTarget(t, d, "web", 30*time.Second, "unauthorized backoff with a dead sign-in", backingOff("unauthorized"))
	if !strings.Contains(ts.LastError, "auth login") {
		t.Errorf("status does not tell the operator to run auth login: %q", ts.LastError)
	}

	authLogin(t, sim, path)
	sim.WaitJobsDone(t, unauthorizedRetry, job)
	waitTarget(t, d, "web", 10*time.Second, "healthy with the new sign-in", healthy)
	if now := d.Status(t).PID; now != pid {
		t.Errorf("the daemon's pid changed from %d to %d: it restarted", pid, now)
	}
	second, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, d, first.AccessToken, first.RefreshToken, second.AccessToken, second.RefreshToken)
	stopClean(t, sim, d, drainBound(cfg))
}

var userCode = regexp.MustCompile(`\b[A-Z0-9]{4}-[A-Z0-9]{4}\b`)

// authLogin runs `runner-manager auth login --config path`, approves the code it prints at the
// simulator, and waits for it to succeed.
func authLogin(t *testing.T, sim *harness.Sim, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Build(t), "auth", "login", "--config", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start auth login: %v", err)
	}
	var out strings.Builder
	approved := false
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if code := userCode.FindString(line); code != "" && !approved {
			if err := sim.ApproveDevice(code, "octocat"); err != nil {
				t.Fatalf("approve %s at the simulator: %v", code, err)
			}
			approved = true
		}
	}
	if err := cmd.Wait(); err != nil || !approved {
		t.Fatalf("auth login failed (approved %v): %v\nstdout:\n%s\nstderr:\n%s", approved, err, out.String(), stderr.String())
	}
	if !strings.Contains(out.String(), "Signed in to GitHub as octocat") {
		t.Fatalf("auth login did not report the sign-in:\n%s", out.String())
	}
}

// renewElsewhere trades refreshToken at the simulator as another host holding a copy would: the
// pair rotates, so the daemon's access and refresh tokens both stop working.
func renewElsewhere(t *testing.T, sim *harness.Sim, refreshToken string) {
	t.Helper()
	form := url.Values{"client_id": {deviceClientID}, "grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	req, err := http.NewRequest(http.MethodPost, sim.URL()+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("renew the pair at the simulator: %v", err)
	}
	defer resp.Body.Close()
	var answer struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.AccessToken == "" {
		t.Fatalf("renewing the pair at the simulator failed: %v %q", err, answer.Error)
	}
}

// assertNoSecret checks promise 9 on what this daemon showed: its log, stdout and status.
func assertNoSecret(t *testing.T, d *harness.Daemon, secrets ...string) {
	t.Helper()
	snap, err := json.Marshal(d.Status(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for what, text := range map[string]string{"log": d.Stderr(), "stdout": d.Stdout(), "status": string(snap)} {
			if strings.Contains(text, s) {
				t.Errorf("a secret (%s…) appears in the daemon's %s (promise 9)", s[:4], what)
			}
		}
	}
}
