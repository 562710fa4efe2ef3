package main

import (
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
)

// newValidateCmd is `runner-manager validate`: the daemon's own config.Load, minus starting
// anything, so a file CI accepts is a file the daemon accepts (Caddy's habit).
func newValidateCmd() *cobra.Command {
	var path, format string
	cmd := &cobra.Command{
		Use:   "validate [PATH]",
		Short: "Check a config file and report every problem with file:line:col",
		Long: `Validate loads the config exactly as the daemon does (defaults, RUNNER_MANAGER_* environment,
every rule) and prints each problem. Exit status: 0 valid (warnings are printed), 1 invalid,
2 the file cannot be read or the flags are wrong. --format github prints GitHub Actions workflow
commands that annotate a pull request; it is the default when GITHUB_ACTIONS=true.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cmd.Flags().Changed("config") && args[0] != path {
					return withCode(exitUsage, errors.New("give the config file either as an argument or with --config, not both"))
				}
				path = args[0]
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
			cfg, err := config.Load(path)
			var cerr *config.Error
			switch {
			case errors.As(err, &cerr):
				report(cmd.OutOrStdout(), path, nil, cerr.Problems)
				return withCode(exitFailure, nil)
			case err != nil:
				return withCode(exitUsage, unreadable(path, err))
			}
			report(cmd.OutOrStdout(), path, cfg, cfg.Warnings)
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfigPath, "config file to check (.toml, .yaml or .yml)")
	cmd.Flags().StringVar(&format, "format", "", "output: text, json or github (default github when GITHUB_ACTIONS=true, else text)")
	return cmd
}

// unreadable phrases a config file that could not be read at all, with what to do about it.
func unreadable(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("config file %s does not exist: pass --config PATH, or create it (see docs/configuration.md)", path)
	}
	return err
}

// reporter prints the outcome of one validation; cfg is nil when the file is invalid.
type reporter func(w io.Writer, path string, cfg *config.Config, problems []config.Problem)

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

func reportText(w io.Writer, path string, cfg *config.Config, problems []config.Problem) {
	for _, p := range problems {
		fmt.Fprintln(w, p.String())
	}
	fmt.Fprintln(w, summary(path, cfg, problems))
}

func reportJSON(w io.Writer, path string, cfg *config.Config, problems []config.Problem) {
	errs, warns := counts(problems)
	out := struct {
		File     string           `json:"file"`
		Valid    bool             `json:"valid"`
		Errors   int              `json:"errors"`
		Warnings int              `json:"warnings"`
		Problems []config.Problem `json:"problems"`
	}{path, cfg != nil, errs, warns, problems}
	if out.Problems == nil {
		out.Problems = []config.Problem{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out) // a failed write to stdout has nowhere better to be reported
}

// reportGitHub prints workflow commands (docs.github.com: "Workflow commands for GitHub Actions"),
// which turn into annotations on the pull request's changed lines.
func reportGitHub(w io.Writer, path string, cfg *config.Config, problems []config.Problem) {
	for _, p := range problems {
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
	fmt.Fprintln(w, summary(path, cfg, problems))
}

var (
	ghDataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghPropertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

func ghData(s string) string     { return ghDataEscaper.Replace(s) }
func ghProperty(s string) string { return ghPropertyEscaper.Replace(s) }
