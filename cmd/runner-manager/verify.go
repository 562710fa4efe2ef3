package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/github/auth"
	"github.com/runner-manager/runner-manager/internal/verify"
)

// verifyDeps are what verify takes from the world; tests replace them.
type verifyDeps struct {
	transport http.RoundTripper
	sleep     auth.SleepFunc // backoff between retries of a failing GitHub
}

func newVerifyCmd() *cobra.Command { return newVerifyCmdWith(verifyDeps{}) }

// newVerifyCmdWith is `runner-manager verify`: validate's online counterpart.
func newVerifyCmdWith(d verifyDeps) *cobra.Command {
	var (
		path    string
		asJSON  bool
		only    []string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check online that GitHub accepts the credential and every target can work",
		Long: `verify asks GitHub, for every enabled target: is the credential accepted; does it carry
what the target needs (a GitHub App: the installation's permissions; a classic token: its
scopes, from X-OAuth-Scopes; a fine-grained token or a sign-in: read-only probes); are the
repository or organization, its runner group (and scale set) there and visible; how much of the
rate budget is left; and, for an organization, how many repositories it has and how many
requests a minute its idle polls will cost. It only reads (a scale set's look-up mints a
registration token) and never registers a runner. Exit codes: docs/exit-codes.md.`,
		Example: `  runner-manager verify
  runner-manager verify --config /etc/runner-manager/config.toml --json
  runner-manager verify --target api --target web`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd.Context(), path)
			if err != nil {
				return err
			}
			for _, n := range only {
				if _, ok := cfg.Target(n); !ok {
					return withCode(exitUsage, fmt.Errorf("%s has no target %q", path, n))
				}
			}
			if len(only) > 0 {
				cp := *cfg
				cp.Targets = slices.DeleteFunc(slices.Clone(cfg.Targets), func(t config.Target) bool { return !slices.Contains(only, t.Name) })
				cfg = &cp
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			rep, err := d.verifyAccounts(ctx, cfg)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				_ = enc.Encode(rep) // a failed write to stdout has nowhere better to go
			} else {
				printVerify(cmd.OutOrStdout(), rep)
			}
			switch rep.Worst() {
			case verify.ProblemCredential:
				return withCode(exitNotAuthed, nil)
			case verify.ProblemAccess:
				return withCode(exitNotReady, nil)
			case verify.ProblemUnavailable:
				return withCode(exitUnavailable, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfigPath, "config file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringArrayVar(&only, "target", nil, "verify only this target (repeatable)")
	// The shell completes the target names of the --config file (read offline: no secret file needed).
	_ = cmd.RegisterFlagCompletionFunc("target", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		cfg, err := config.LoadWith(path, config.Options{Offline: true})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(cfg.Targets))
		for _, t := range cfg.EnabledTargets() {
			names = append(names, t.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up on GitHub after this long (exit 7)")
	return cmd
}

func printVerify(w io.Writer, r verify.Report) {
	ready := 0
	for _, t := range r.Targets {
		if t.Account != "" {
			fmt.Fprintf(w, "%s (%s) with %s of account %s\n", t.Name, t.Scope, t.Credential, t.Account)
		} else {
			fmt.Fprintf(w, "%s (%s) with %s\n", t.Name, t.Scope, t.Credential)
		}
		ok := true
		for _, c := range t.Checks {
			mark := string(c.Status)
			if c.Status == verify.Fail {
				mark, ok = "FAIL", false
			}
			fmt.Fprintf(w, "  %-4s  %-13s %s\n", mark, c.Name, c.Detail)
		}
		if t.Rate != nil { // the credential answered: the cost is worth reading
			fmt.Fprintf(w, "  cost: %g requests/min when idle\n", t.RequestsPerMinute)
		}
		if ok {
			ready++
		}
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "not verified (enabled = false): %s\n", strings.Join(r.Skipped, ", "))
	}
	fmt.Fprintf(w, "GitHub cost: the polls need %d of %d points/min of the request governor\n", r.Plan.Need, r.Plan.Ceiling)
	for _, name := range slices.Sorted(maps.Keys(r.AccountPlans)) {
		p := r.AccountPlans[name]
		fmt.Fprintf(w, "GitHub cost of account %s: the polls need %d of %d points/min of its request governor\n", name, p.Need, p.Ceiling)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	fmt.Fprintf(w, "verify: %d of %s ready\n", ready, plural(len(r.Targets), "target"))
}

// verifyAccounts verifies the targets of each account the enabled targets use with that
// account's own client (its credential, its api_url), and merges the reports. An account whose
// credential cannot even be loaded stops it: exit 3, naming the account.
func (d verifyDeps) verifyAccounts(ctx context.Context, cfg *config.Config) (verify.Report, error) {
	var rep verify.Report
	for _, t := range cfg.Targets {
		if !t.IsEnabled() {
			rep.Skipped = append(rep.Skipped, t.Name)
		}
	}
	accounts := cfg.UsedAccounts()
	if len(accounts) == 0 {
		accounts = []string{config.DefaultAccount} // no enabled target: the report says so
	}
	for _, name := range accounts {
		acfg := cfg.ForAccount(name)
		client, err := github.NewFromConfig(acfg.GitHub, config.AccountStateDir(cfg.Daemon.StateDir, name), github.Options{Transport: d.transport, Sleep: d.sleep, MaxRetries: 2})
		if err != nil && name != config.DefaultAccount {
			return rep, withCode(exitNotAuthed, fmt.Errorf("account %s: no usable GitHub credential: %w", name, err))
		}
		if err != nil {
			return rep, withCode(exitNotAuthed, fmt.Errorf("no usable GitHub credential: %w", err))
		}
		r := verify.Run(ctx, acfg, verify.Options{GitHub: client, Kind: acfg.GitHub.Auth(),
			ScaleSets: verify.ActionsService{APIURL: acfg.GitHub.APIURL, Tokens: client, Transport: d.transport}})
		r.Skipped = nil // counted once, above
		rep.Merge(name, r)
	}
	return rep, nil
}
