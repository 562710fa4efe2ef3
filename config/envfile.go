package config

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// maxEnvFileSize bounds env_file like every number: a runner's environment, not a data file.
const maxEnvFileSize = 1 << 20

// envFile merges target i's env_file into its env. The file is a credential file (the rule of
// CheckSecretFile), holding KEY=VALUE lines; a name set both there and in env is an error, so
// no reader has to know which would win. Offline (validate on another host) it reads nothing.
// Messages name the file and the line, never a value. TestEnvFile.
func (c *checker) envFile(cfg *Config, i int) {
	t := &cfg.Targets[i]
	p := "target." + strconv.Itoa(i) + ".env_file"
	if t.EnvFile == "" || c.offline {
		return
	}
	c.secretFile(p, t.EnvFile)
	path := resolvePath(c.file, t.EnvFile)
	if _, sev := secretProblem(path); sev == SeverityError {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		c.add(SeverityError, p, fmt.Sprintf("env_file %q cannot be read: %v", t.EnvFile, unwrapPathError(err)))
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEnvFileSize+1))
	switch {
	case err != nil:
		c.add(SeverityError, p, fmt.Sprintf("env_file %q cannot be read: %v", t.EnvFile, err))
		return
	case len(data) > maxEnvFileSize:
		c.add(SeverityError, p, fmt.Sprintf("env_file %q is larger than %d bytes: it holds a runner's environment, KEY=VALUE lines", t.EnvFile, maxEnvFileSize))
		return
	}
	vars, problems := parseEnvFile(data)
	for _, pr := range problems {
		c.add(SeverityError, p, fmt.Sprintf("env_file %q %s", t.EnvFile, pr))
	}
	if len(problems) > 0 {
		return
	}
	if len(vars) > 0 && t.Env == nil {
		t.Env = make(map[string]string, len(vars))
	}
	for k, v := range vars {
		if _, clash := t.Env[k]; clash {
			c.add(SeverityError, p, fmt.Sprintf("%s is set both in env and in env_file %q: keep it in one of them", k, t.EnvFile))
			continue
		}
		t.Env[k] = v
		if cfg.fileEnv == nil {
			cfg.fileEnv = map[int][]string{}
		}
		cfg.fileEnv[i] = append(cfg.fileEnv[i], k)
	}
}

// parseEnvFile reads KEY=VALUE lines: blank lines and lines starting with # are skipped, the
// value is everything after the first = (no quoting, no expansion). It returns the problems by
// line, never quoting a line (a malformed line may be a secret).
func parseEnvFile(data []byte) (map[string]string, []string) {
	vars := map[string]string{}
	line := map[string]int{}
	var problems []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxEnvFileSize+1)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSuffix(sc.Text(), "\r")
		if trimmed := strings.TrimSpace(text); trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		k, v, ok := strings.Cut(text, "=")
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("line %d is not KEY=VALUE", n))
		case !envName.MatchString(k):
			problems = append(problems, fmt.Sprintf("line %d: the name before = is not a valid environment variable name (letters, digits and _, not starting with a digit)", n))
		case line[k] != 0:
			problems = append(problems, fmt.Sprintf("line %d: %s is already set on line %d", n, k, line[k]))
		default:
			vars[k], line[k] = v, n
		}
	}
	if err := sc.Err(); err != nil {
		problems = append(problems, fmt.Sprintf("cannot be read: %v", err))
	}
	return vars, problems
}

// readableSecrets warns when the config file holds target env values (inline, not from env_file)
// and local users other than root may read it: every job runs as a local user. A group other
// than root's may hold a runner user; every user is every job. TestReadableConfigWarning.
func (c *checker) readableSecrets(cfg *Config) {
	if c.offline {
		return
	}
	first := -1
	for i, t := range cfg.Targets {
		if len(t.Env) > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return
	}
	fi, err := os.Stat(c.file)
	if err != nil || !fi.Mode().IsRegular() {
		return // not read from a file (a test's bytes): nothing on disk to read
	}
	who, fix := readableBy(c.file, fi)
	if who == "" {
		return
	}
	c.add(SeverityWarning, "target."+strconv.Itoa(first)+".env", fmt.Sprintf("the config file holds target env values and is readable by %s: jobs run as local users, so a job may read them; %s", who, fix))
}
