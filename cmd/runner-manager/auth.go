package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github"
	ghauth "github.com/runner-manager/runner-manager/internal/github/auth"
)

// authDeps are what the auth commands take from the world; tests replace them.
type authDeps struct {
	clock     ghauth.Clock
	sleep     ghauth.SleepFunc
	host      string
	transport http.RoundTripper
}

func newAuthCmd() *cobra.Command { return newAuthCmdWith(authDeps{}) }

// newAuthCmdWith is `runner-manager auth login|status|logout`: the device-flow sign-in kept in
// <state_dir>/credentials/github-user.json. None of them prints a token.
func newAuthCmdWith(d authDeps) *cobra.Command {
	var path, account string
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Sign this host in to GitHub with the device flow, show or remove the sign-in",
	}
	cmd.PersistentFlags().StringVar(&path, "config", defaultConfigPath, "config file (for github.api_url, github.device_flow.client_id and daemon.state_dir)")
	cmd.PersistentFlags().StringVar(&account, "account", "", "the [[account]] to sign in (its api_url and device_flow.client_id; its sign-in is kept in <state_dir>/accounts/NAME); default: [github]")
	opts := func(out io.Writer, webURL string) github.SignInOptions {
		return github.SignInOptions{WebURL: webURL, Out: out, Host: d.host, Transport: d.transport, Clock: d.clock, Sleep: d.sleep}
	}
	// onAccount runs a subcommand on the section of the account it acts on and that account's
	// sign-in directory, once the config loaded.
	onAccount := func(run func(cmd *cobra.Command, gc config.GitHub, stateDir string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			gc, stateDir, err := loadAuthConfig(cmd.Context(), path, account)
			if err != nil {
				return err
			}
			return run(cmd, gc, stateDir)
		}
	}

	var webURL string
	login := &cobra.Command{
		Use:   "login",
		Short: "Sign in with a code entered in the browser; a running daemon picks the sign-in up by itself",
		Long: `login prints a URL and a code; open the URL on any device, enter the code and approve.
The token pair is stored with mode 0600 in <state_dir>/credentials/github-user.json and renewed
by the daemon before it expires. The previous sign-in is replaced, not revoked. The sign-in page
is on github.com for api.github.com, on SUBDOMAIN.ghe.com for api.SUBDOMAIN.ghe.com (GHE.com),
and on the API URL's own host otherwise (GHES, the simulator); --web-url overrides it.`,
		Args: cobra.NoArgs,
		RunE: onAccount(func(cmd *cobra.Command, gc config.GitHub, stateDir string) error {
			cred, err := github.SignIn(cmd.Context(), gc, stateDir, opts(cmd.OutOrStdout(), webURL))
			if err != nil {
				return withCode(exitNotAuthed, fmt.Errorf("sign-in failed: %w", err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Signed in to GitHub as %s; the sign-in is stored in %s.\n", cred.Login, ghauth.NewStore(stateDir).Path())
			fmt.Fprintln(cmd.OutOrStdout(), "A running daemon switches to it when its current sign-in stops working or is next renewed; no restart is needed.")
			return nil
		}),
	}
	login.Flags().StringVar(&webURL, "web-url", "", "sign-in host (default: github.com for api.github.com, else the API URL's host)")

	status := &cobra.Command{
		Use:   "status",
		Short: "Show who is signed in, when the token expires and whether it can be renewed",
		Args:  cobra.NoArgs,
		RunE: onAccount(func(cmd *cobra.Command, gc config.GitHub, stateDir string) error {
			st, err := github.SignInStatus(cmd.Context(), gc, stateDir, opts(io.Discard, ""))
			if err != nil {
				return withCode(exitNotAuthed, err)
			}
			return printSignIn(cmd.OutOrStdout(), st, clockOr(d.clock).Now())
		}),
	}

	logout := &cobra.Command{
		Use:   "logout",
		Short: "Remove this host's sign-in (the tokens are not revoked at GitHub)",
		Args:  cobra.NoArgs,
		RunE: onAccount(func(cmd *cobra.Command, _ config.GitHub, stateDir string) error {
			p := ghauth.NewStore(stateDir).Path()
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(cmd.OutOrStdout(), "Not signed in (there is no %s).\n", p)
				return nil
			}
			if err := github.SignOut(stateDir); err != nil {
				return withCode(exitLocalState, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Signed out: removed %s.\n", p)
			fmt.Fprintln(cmd.OutOrStdout(), "The tokens were not revoked; revoke the App's authorization in your GitHub settings if this host is compromised.")
			return nil
		}),
	}
	cmd.AddCommand(login, status, logout)
	return cmd
}

// loadConfig loads the config a command acts on: an invalid one exits 1, an unreadable one 2.
func loadConfig(ctx context.Context, path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	learnSecrets(ctx, cfg, err)
	var cerr *config.Error
	switch {
	case errors.As(err, &cerr):
		return nil, withCode(exitFailure, fmt.Errorf("%w (run `runner-manager validate %s`)", err, path))
	case err != nil:
		return nil, withCode(exitUsage, fmt.Errorf("%s: %w", path, err))
	}
	return cfg, nil
}

// loadAuthConfig returns the section of the account auth acts on ("" : [github]) and the
// directory its sign-in is kept in.
func loadAuthConfig(ctx context.Context, path, account string) (config.GitHub, string, error) {
	cfg, err := loadConfig(ctx, path)
	if err != nil {
		return config.GitHub{}, "", err
	}
	gc, ok := cfg.GitHubOf(account)
	isDefault := account == "" || account == config.DefaultAccount
	switch {
	case !ok:
		return config.GitHub{}, "", withCode(exitUsage, fmt.Errorf("%s has no account %q (its accounts: %s)", path, account, strings.Join(cfg.AccountNames(), ", ")))
	case gc.Auth() != config.AuthDeviceFlow && isDefault:
		return config.GitHub{}, "", withCode(exitUsage, fmt.Errorf("%s does not configure [github.device_flow]: auth signs in with the device flow; add [github.device_flow] client_id = \"<the App's client ID>\"", path))
	case gc.Auth() != config.AuthDeviceFlow:
		return config.GitHub{}, "", withCode(exitUsage, fmt.Errorf("%s: account %q does not configure [account.device_flow]: auth signs in with the device flow; add one under that [[account]] with client_id = \"<the App's client ID>\"", path, account))
	}
	return gc, config.AccountStateDir(cfg.Daemon.StateDir, account), nil
}

func printSignIn(w io.Writer, st github.SignInState, now time.Time) error {
	if st.Login != "" {
		fmt.Fprintf(w, "Signed in to GitHub as %s (GitHub confirmed it just now).\n", st.Login)
	} else {
		fmt.Fprintf(w, "Signed in to GitHub as %s, but GitHub does not accept the token now.\n", st.StoredLogin)
	}
	fmt.Fprintf(w, "  Credential file: %s\n", st.Path)
	fmt.Fprintf(w, "  Signed in on:    %s\n", st.Host)
	switch {
	case st.AccessExpiresAt.IsZero():
		fmt.Fprintln(w, "  Access token:    does not expire")
	case st.Expired:
		fmt.Fprintf(w, "  Access token:    expired at %s\n", st.AccessExpiresAt.UTC().Format(time.RFC3339))
	default:
		fmt.Fprintf(w, "  Access token:    expires at %s (in %s)\n", st.AccessExpiresAt.UTC().Format(time.RFC3339), st.AccessExpiresAt.Sub(now).Round(time.Minute))
	}
	switch {
	case st.Renewable:
		fmt.Fprintf(w, "  Renewable:       yes, until %s; the daemon renews the token %s before it expires\n",
			st.RefreshExpiresAt.UTC().Format(time.RFC3339), ghauth.DefaultRenewBefore)
	case st.AccessExpiresAt.IsZero():
		fmt.Fprintln(w, "  Renewable:       not needed")
	default:
		fmt.Fprintln(w, "  Renewable:       no: run `runner-manager auth login` on this host before the token expires")
	}
	if st.Login == "" {
		reason := "the access token has expired"
		if st.Check != nil {
			reason = st.Check.Error()
		}
		if st.Renewable && st.Expired {
			fmt.Fprintf(w, "  Note:            %s; the daemon renews it on its next request\n", reason)
			return nil
		}
		return withCode(exitNotAuthed, fmt.Errorf("%s: run `runner-manager auth login`", reason))
	}
	return nil
}

func clockOr(c ghauth.Clock) ghauth.Clock {
	if c == nil {
		return ghauth.SystemClock{}
	}
	return c
}
