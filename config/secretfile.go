package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// CheckSecretFile is the one rule for every credential file (github.token_file,
// github.private_key_file, webhook.secret_file, daemon.status_token_file, fleet.etcd_key_file, a
// target's env_file): `validate` and the daemon
// both call it, so a file validate accepts is a file the daemon uses. It returns an error for a file
// that is missing, not a regular file, readable by every user, or writable by its group or by others
// (whoever can write it can swap the credential); a group-readable file is allowed with a warning
// (some deployments share a group with a secrets agent). Messages name the path, never the content.
func CheckSecretFile(path string) (warning string, err error) {
	msg, sev := secretProblem(path)
	switch {
	case msg == "":
		return "", nil
	case sev == SeverityWarning:
		return path + " " + msg, nil
	default:
		return "", errors.New(path + " " + msg)
	}
}

// secretProblem says what is wrong with the credential file at path ("" when nothing is), phrased
// to follow the file's name.
func secretProblem(path string) (string, Severity) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "does not exist", SeverityError
		}
		return fmt.Sprintf("cannot be read: %v", unwrapPathError(err)), SeverityError
	}
	switch {
	case fi.IsDir():
		return "is a directory, not a file", SeverityError
	case !fi.Mode().IsRegular():
		return "is not a regular file", SeverityError
	}
	return permProblem(path, fi)
}

// SecretFile is a setting that names a file holding a credential, and the file.
type SecretFile struct {
	Key, Path string
}

// SecretFiles lists the credential files c names (those set): everything that prints anything
// scrubs their contents (internal/redact). One line per source, so a new one is scrubbed
// everywhere by adding it here.
func (c *Config) SecretFiles() []SecretFile {
	var out []SecretFile
	add := func(key, path string) {
		if path != "" {
			out = append(out, SecretFile{Key: key, Path: path})
		}
	}
	add("github.token_file", c.GitHub.TokenFile)
	add("github.private_key_file", c.GitHub.PrivateKeyFile)
	for _, a := range c.Accounts {
		add("account."+a.Name+".token_file", a.TokenFile)
		add("account."+a.Name+".private_key_file", a.PrivateKeyFile)
	}
	add("daemon.status_token_file", c.Daemon.StatusTokenFile)
	if c.Webhook != nil {
		add("webhook.secret_file", c.Webhook.SecretFile)
	}
	if c.Fleet != nil {
		add("fleet.etcd_key_file", c.Fleet.EtcdKeyFile)
	}
	for _, t := range c.Targets {
		add("target."+t.Name+".env_file", t.EnvFile)
		add("target."+t.Name+".registry_auth_file", t.RegistryAuthFile)
	}
	return out
}

// SecretValues are the secrets written into c itself: target env values (config print shows
// their names only). Scrubbed from every output like the files' contents.
func (c *Config) SecretValues() []string {
	var out []string
	for _, t := range c.Targets {
		for _, v := range t.Env {
			out = append(out, v)
		}
	}
	return out
}

// Secrets are the credential file paths and the inline secret values of what a load returned:
// the config's, or for a rejected file (a *Error) the files it names. Whoever prints a load's
// outcome teaches them to its redact.Redactor first.
func Secrets(cfg *Config, err error) (paths, values []string) {
	var files []SecretFile
	var cerr *Error
	switch {
	case cfg != nil:
		files, values = cfg.SecretFiles(), cfg.SecretValues()
	case errors.As(err, &cerr):
		files = cerr.SecretFiles
	}
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	return paths, values
}
