package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/golden"
)

// runCmd executes one command tree as main would and returns stdout+stderr and the exit code.
func runCmd(cmd *cobra.Command, args ...string) (string, int) {
	var out bytes.Buffer
	code := runCommand(cmd, args, nil, &out, &out)
	return out.String(), code
}

// authWorld is a simulator plus the injected clock and host the auth commands run with.
type authWorld struct {
	t        *testing.T
	srv      *ghsim.Server
	clock    *ghsim.FakeClock
	cfg      string
	stateDir string
}

func newAuthWorld(t *testing.T) *authWorld {
	t.Helper()
	clock := ghsim.NewFakeClock(time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC))
	srv := startSim(t, clock)
	srv.CreateOAuthClient("Iv1.cli")
	w := &authWorld{t: t, srv: srv, clock: clock, stateDir: t.TempDir()}
	w.cfg = filepath.Join(t.TempDir(), "config.toml")
	body := "[daemon]\nstate_dir = \"" + w.stateDir + "\"\n\n[github]\napi_url = \"" + srv.URL() + "\"\n\n[github.device_flow]\nclient_id = \"Iv1.cli\"\n"
	if err := os.WriteFile(w.cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// run executes `auth args...` as main would and returns normalised stdout+stderr and the exit code.
func (w *authWorld) run(args ...string) (string, int) {
	w.t.Helper()
	approve := func(ctx context.Context, d time.Duration) error {
		for _, code := range w.srv.PendingUserCodes() {
			if err := w.srv.ApproveDevice(code, "octocat"); err != nil {
				return err
			}
		}
		w.clock.Advance(d)
		return ctx.Err()
	}
	out, code := runCmd(newAuthCmdWith(authDeps{clock: w.clock, sleep: approve, host: "build-host-1"}), append(args, "--config", w.cfg)...)
	s := strings.ReplaceAll(out, w.srv.URL(), "{{SIM}}")
	s = strings.ReplaceAll(s, w.stateDir, "{{STATE}}")
	s = regexp.MustCompile(`code [A-Z0-9]{4}-[A-Z0-9]{4}`).ReplaceAllString(s, "code {{CODE}}")
	return s, code
}

func TestAuthCommands(t *testing.T) {
	w := newAuthWorld(t)
	steps := []struct {
		name    string
		args    []string
		advance time.Duration // before the step
		code    int
	}{
		{"status-before", []string{"status"}, 0, exitNotAuthed},
		{"login", []string{"login"}, 0, exitOK},
		{"status", []string{"status"}, time.Hour, exitOK},
		{"status-expired", []string{"status"}, 8 * time.Hour, exitOK},
		{"logout", []string{"logout"}, 0, exitOK},
		{"logout-again", []string{"logout"}, 0, exitOK},
	}
	var secrets []string
	for _, st := range steps {
		w.clock.Advance(st.advance)
		out, code := w.run(st.args...)
		if code != st.code {
			t.Errorf("%s: exit %d, want %d\n%s", st.name, code, st.code, out)
		}
		golden.Check(t, filepath.Join("testdata", "auth", st.name+".golden"), []byte(out), *update)
		if st.name == "login" {
			b, err := os.ReadFile(filepath.Join(w.stateDir, "credentials", "github-user.json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`gh[ur]_[A-Za-z0-9_]+`).FindAllString(string(b), -1) {
				secrets = append(secrets, m)
			}
			if len(secrets) != 2 {
				t.Fatalf("stored credential has %d tokens, want 2", len(secrets))
			}
		}
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s printed a token", st.name)
			}
		}
	}
}

func TestAuthNeedsDeviceFlowConfig(t *testing.T) {
	w := newAuthWorld(t)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.cfg, []byte("[github]\ntoken_file = \""+tok+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := w.run("login")
	if code != exitUsage || !strings.Contains(out, "does not configure [github.device_flow]") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// TestAuthLoginAccount: `auth login --account NAME` signs in that [[account]] with its own
// client ID, keeping its sign-in apart from [github]'s; an unknown account is named.
func TestAuthLoginAccount(t *testing.T) {
	w := newAuthWorld(t)
	w.srv.CreateOAuthClient("Iv1.ops")
	body, err := os.ReadFile(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	body = append(body, []byte("\n[[account]]\nname = \"ops\"\napi_url = \""+w.srv.URL()+"\"\n[account.device_flow]\nclient_id = \"Iv1.ops\"\n"+
		"\n[[account]]\nname = \"ci\"\ntoken_file = \""+tok+"\"\n")...)
	if err := os.WriteFile(w.cfg, body, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := w.run("login", "--account", "ops")
	if code != exitOK || !strings.Contains(out, "{{STATE}}/accounts/ops/credentials/github-user.json") {
		t.Fatalf("login --account ops: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(w.stateDir, "credentials", "github-user.json")); !os.IsNotExist(err) {
		t.Fatalf("the account's sign-in reached [github]'s place: %v", err)
	}
	if out, code := w.run("status", "--account", "ops"); code != exitOK || !strings.Contains(out, "Signed in to GitHub as octocat") {
		t.Fatalf("status --account ops: exit %d\n%s", code, out)
	}
	if out, code := w.run("status"); code != exitNotAuthed {
		t.Fatalf("[github] is signed in too: exit %d\n%s", code, out)
	}
	if out, code := w.run("login", "--account", "nope"); code != exitUsage || !strings.Contains(out, `has no account "nope" (its accounts: default, ops, ci)`) {
		t.Fatalf("unknown account: exit %d\n%s", code, out)
	}
	if out, code := w.run("login", "--account", "ci"); code != exitUsage || !strings.Contains(out, `account "ci" does not configure [account.device_flow]`) {
		t.Fatalf("token account: exit %d\n%s", code, out)
	}
}
