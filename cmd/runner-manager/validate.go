package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/engine"
	"github.com/runner-manager/runner-manager/internal/github"
)

// newValidateCmd is `runner-manager validate`: the daemon's own config.Load, minus starting
// anything, so a file CI accepts is a file the daemon accepts (Caddy's habit).
func newValidateCmd() *cobra.Command {
	var path, format, inputFormat string
	var offline bool
	cmd := &cobra.Command{
		Use:   "validate [PATH|-]...",
		Short: "Check config files and report every problem with file:line:col",
		Long: `Validate loads each config file exactly as the daemon does (defaults, the RUNNER_MANAGER_
environment variables, every rule) and prints each problem. - reads the config from standard input
(TOML unless --input-format yaml). Exit status: 0 every file is valid (warnings are printed),
1 a file is invalid, 2 a file cannot be read or the flags are wrong (2 wins over 1).

--offline skips what only the host the config is meant for can answer: whether the secret files
(github.token_file, github.private_key_file, webhook.secret_file, a target's env_file, which is
not read either) exist and have safe modes, and whether the config file itself is readable by
other users while it holds env values. Use it in a CI pipeline; the daemon always checks them.

--format github prints GitHub Actions workflow commands that annotate a pull request; it is the
default when GITHUB_ACTIONS=true. --format json prints one object per file, in an array when
more than one file is given.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			files := args
			if len(files) == 0 {
				files = []string{path}
			} else if cmd.Flags().Changed("config") && (len(args) != 1 || args[0] != path) {
				return withCode(exitUsage, errors.New("give the config files either as arguments or with --config, not both"))
			}
			if format == "" {
				format = "text"
				if os.Getenv("GITHUB_ACTIONS") == "true" {
					format = "github"
				}
			}
			report, ok := reporters[format]
			if !ok {
				return withCode(exitUsage, fmt.Errorf("unknown --format %q: use text, json or github", format))
			}
			if inputFormat != "toml" && inputFormat != "yaml" {
				return withCode(exitUsage, fmt.Errorf("unknown --input-format %q: use toml or yaml", inputFormat))
			}
			code := exitOK
			var results []result
			for _, f := range files {
				r, err := validateOne(cmd.Context(), cmd.InOrStdin(), f, config.Options{Offline: offline, Format: stdinFormat(f, inputFormat)})
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "runner-manager:", err)
					code = max(code, exitUsage)
					continue
				}
				if r.cfg == nil {
					code = max(code, exitFailure)
				}
				results = append(results, r)
			}
			report(cmd.OutOrStdout(), results, len(files) > 1)
			if code != exitOK {
				return withCode(code, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfigPath, "config file to check (.toml, .yaml or .yml); or give files as arguments")
	cmd.Flags().BoolVar(&offline, "offline", false, "skip the checks of this host's secret files (their existence and modes): for CI")
	choiceFlag(cmd, &format, "format", "", "output: text, json or github (default github when GITHUB_ACTIONS=true, else text)", "text", "json", "github")
	choiceFlag(cmd, &inputFormat, "input-format", "toml", "format of a config read from standard input (-): toml or yaml", "toml", "yaml")
	return cmd
}

// stdinName is how a config read from standard input is named in messages.
const stdinName = "-"

// stdinFormat is the parser format for file: the flag's for standard input, else from the name.
func stdinFormat(file, inputFormat string) string {
	if file == stdinName {
		return inputFormat
	}
	return ""
}

// result is the outcome of one file: cfg is nil when it is invalid.
type result struct {
	path     string
	cfg      *config.Config
	problems []config.Problem
}

// validateOne loads one file (stdin for "-"); an error means it could not be read at all.
func validateOne(ctx context.Context, stdin io.Reader, path string, opts config.Options) (result, error) {
	var (
		cfg *config.Config
		err error
	)
	if path == stdinName {
		data, rerr := io.ReadAll(stdin)
		if rerr != nil {
			return result{}, fmt.Errorf("read the config from standard input: %w", rerr)
		}
		cfg, err = config.LoadBytes(path, data, opts)
	} else {
		cfg, err = config.LoadWith(path, opts)
	}
	learnSecrets(ctx, cfg, err)
	var cerr *config.Error
	switch {
	case errors.As(err, &cerr):
		return result{path: path, problems: cerr.Problems}, nil
	case err != nil:
		return result{}, unreadable(path, err)
	}
	return result{path: path, cfg: cfg, problems: cfg.Warnings}, nil
}

// unreadable phrases a config file that could not be read at all, with what to do about it.
func unreadable(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("config file %s does not exist: pass --config PATH, or create it (see docs/configuration.md)", path)
	}
	return err
}

// reporter prints the outcome of the files validated; several says more than one was given (the
// JSON form is then an array).
type reporter func(w io.Writer, results []result, several bool)

var reporters = map[string]reporter{"text": reportText, "json": reportJSON, "github": reportGitHub}

func counts(problems []config.Problem) (errs, warns int) {
	for _, p := range problems {
		if p.Severity == config.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	return errs, warns
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func summary(path string, cfg *config.Config, problems []config.Problem) string {
	errs, warns := counts(problems)
	if cfg == nil {
		return fmt.Sprintf("%s: invalid (%s, %s)", path, plural(errs, "error"), plural(warns, "warning"))
	}
	return fmt.Sprintf("%s: valid (%s, %d enabled; %s)", path, plural(len(cfg.Targets), "target"), len(cfg.EnabledTargets()), plural(warns, "warning"))
}

func reportText(w io.Writer, results []result, _ bool) {
	for _, r := range results {
		for _, p := range r.problems {
			fmt.Fprintln(w, p.String())
		}
		fmt.Fprintln(w, summary(r.path, r.cfg, r.problems))
		if line := projectedCost(r.cfg); line != "" {
			fmt.Fprintln(w, line)
		}
	}
}

// projectedCost is what the enabled repository targets will spend of the request governor's
// ceiling, idle, at their poll intervals. An organization's cost depends on its repository count,
// which only GitHub knows: `verify` reports it.
func projectedCost(cfg *config.Config) string {
	if cfg == nil {
		return ""
	}
	var ts []github.PollTarget
	orgs := 0
	for _, t := range cfg.EnabledTargets() {
		if t.Organization != "" {
			orgs++
			continue
		}
		ts = append(ts, github.PollTarget{Name: t.Name, Interval: engine.PollInterval(cfg, t), Points: github.PassPoints(false, 1)})
	}
	if len(ts) == 0 && orgs == 0 {
		return ""
	}
	p := github.PlanPolls(cfg.GitHub.PointsPerMinute, ts)
	line := fmt.Sprintf("  GitHub cost: %s poll for %d of %d points/min", plural(len(ts), "repository target"), p.Need, p.Ceiling)
	if p.Message != "" {
		line += "; too many: " + p.Message
	}
	if orgs > 0 {
		line += fmt.Sprintf("; plus %s, whose cost depends on their repository count (runner-manager verify reports it)", plural(orgs, "organization target"))
	}
	return line
}

type jsonResult struct {
	File     string           `json:"file"`
	Valid    bool             `json:"valid"`
	Errors   int              `json:"errors"`
	Warnings int              `json:"warnings"`
	Problems []config.Problem `json:"problems"`
}

func reportJSON(w io.Writer, results []result, several bool) {
	out := make([]jsonResult, 0, len(results))
	for _, r := range results {
		errs, warns := counts(r.problems)
		j := jsonResult{r.path, r.cfg != nil, errs, warns, r.problems}
		if j.Problems == nil {
			j.Problems = []config.Problem{}
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// A failed write to stdout has nowhere better to be reported.
	if several {
		_ = enc.Encode(out)
	} else if len(out) == 1 {
		_ = enc.Encode(out[0])
	}
}

// reportGitHub prints workflow commands (docs.github.com: "Workflow commands for GitHub Actions"),
// which turn into annotations on the pull request's changed lines.
func reportGitHub(w io.Writer, results []result, _ bool) {
	for _, r := range results {
		reportGitHubFile(w, r)
	}
}

func reportGitHubFile(w io.Writer, r result) {
	for _, p := range r.problems {
		var props []string
		if p.File != "" {
			props = append(props, "file="+ghProperty(p.File))
			if p.Line > 0 {
				props = append(props, "line="+strconv.Itoa(p.Line), "col="+strconv.Itoa(p.Col))
			}
		} else {
			props = append(props, "title="+ghProperty(p.Key))
		}
		fmt.Fprintf(w, "::%s %s::%s\n", p.Severity, strings.Join(props, ","), ghData(p.Text()))
	}
	fmt.Fprintln(w, summary(r.path, r.cfg, r.problems))
}

var (
	ghDataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghPropertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

func ghData(s string) string     { return ghDataEscaper.Replace(s) }
func ghProperty(s string) string { return ghPropertyEscaper.Replace(s) }
