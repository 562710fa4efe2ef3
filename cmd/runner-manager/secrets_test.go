package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
	"github.com/runner-manager/runner-manager/internal/redact/redacttest"
)

// schemaKey is one settable key of docs/config.schema.json: its path of sections ("target" is the
// [[target]] list; its first entry gets the value) and the JSON type of its value.
type schemaKey struct {
	path []string
	kind string // "string", "integer", "boolean", "array" (of strings), "object" (string map)
}

func (k schemaKey) String() string { return strings.Join(k.path, ".") }

// schemaKeys walks the committed schema (kept equal to the config structs by config's tests), so a
// key added to the config is typed into by TestNoSecretInAnyOutput without editing it.
func schemaKeys(t *testing.T) []schemaKey {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			return doc.Defs[strings.TrimPrefix(ref, "#/$defs/")]
		}
		return s
	}
	var keys []schemaKey
	var walk func(def map[string]any, path []string)
	walk = func(def map[string]any, path []string) {
		props, _ := def["properties"].(map[string]any)
		for name, p := range props {
			s := resolve(p.(map[string]any))
			at := append(slices.Clone(path), name)
			switch kind, _ := s["type"].(string); {
			case kind == "object" && s["properties"] != nil:
				walk(s, at)
			case kind == "array" && resolve(s["items"].(map[string]any))["properties"] != nil:
				walk(resolve(s["items"].(map[string]any)), at)
			default:
				keys = append(keys, schemaKey{path: at, kind: kind})
			}
		}
	}
	walk(doc.Defs["Config"], nil)
	slices.SortFunc(keys, func(a, b schemaKey) int { return strings.Compare(a.String(), b.String()) })
	if len(keys) < 40 {
		t.Fatalf("the schema walk found only %d keys: %v", len(keys), keys)
	}
	return keys
}

// set puts v at k in the parsed config doc, typed as the key's kind takes a string.
func (k schemaKey) set(doc map[string]any, v string) {
	m := doc
	for _, p := range k.path[:len(k.path)-1] {
		switch next := m[p].(type) {
		case []any: // [[target]]: the first entry
			m = next[0].(map[string]any)
		case map[string]any:
			m = next
		default:
			n := map[string]any{}
			m[p], m = n, n
		}
	}
	var val any = v
	switch k.kind {
	case "array":
		val = []any{v}
	case "object":
		val = map[string]any{"SOME_VAR": v}
	}
	m[k.path[len(k.path)-1]] = val
}

// TestNoSecretInAnyOutput types a secret into every key of the schema, one at a time: a GitHub
// token's shape, and the content of a configured secret file (daemon.status_token_file, a value
// with no shape at all). Whatever the key, neither may reach any output of `validate` (text,
// json, github annotations), `config print` (toml, json), `verify`, `doctor`, or the daemon's start-up
// errors, on stdout or stderr. Before internal/redact, validate and the start-up error printed
// a token pasted as the value of token_file (issue 28).
func TestNoSecretInAnyOutput(t *testing.T) {
	srv := ghsimtest.Start(t, ghsim.Options{})
	srv.CreateRepo("acme", "web")
	dir := t.TempDir()
	token := srv.AddToken(ghsim.TokenOptions{})
	const statusSecret = `status-bearer-<Zq8v>&"4711"-no-shape` // characters %q and JSON escape
	tokenFile, statusFile := filepath.Join(dir, "token"), filepath.Join(dir, "status-token")
	for f, c := range map[string]string{tokenFile: token + "\n", statusFile: statusSecret + "\n"} {
		if err := os.WriteFile(f, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := fmt.Sprintf(`[daemon]
state_dir = %q
status_token_file = %q

[github]
api_url = %q
token_file = %q

[[target]]
name = "web"
repository = "acme/web"
labels = ["linux"]
`, filepath.Join(dir, "state"), statusFile, srv.URL(), tokenFile)

	secrets := []string{redacttest.PAT, statusSecret, token}
	for _, k := range schemaKeys(t) {
		typed := []string{redacttest.PAT, statusSecret}
		if k.String() == "daemon.status_token_file" {
			typed[1] = token // the key naming statusSecret's file no longer names it
		}
		for _, secret := range typed {
			var doc map[string]any
			if err := toml.Unmarshal([]byte(base), &doc); err != nil {
				t.Fatal(err)
			}
			k.set(doc, secret)
			body, err := toml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "config.toml")
			if err := os.WriteFile(path, body, 0o600); err != nil {
				t.Fatal(err)
			}
			runs := [][]string{
				{"validate", path}, {"validate", "--format", "json", path}, {"validate", "--format", "github", path},
				{"config", "print", "--config", path}, {"config", "print", "--format", "json", "--config", path},
				{"verify", "--config", path, "--timeout", "10s"}, {"verify", "--json", "--config", path, "--timeout", "10s"},
				{"doctor", "--config", path, "--timeout", "10s"}, {"doctor", "--json", "--config", path, "--timeout", "10s"},
			}
			_, _, code := execute(t, "validate", path)
			if code != exitOK { // a valid config would start a daemon that runs: its logs are internal/daemon's test
				runs = append(runs, []string{"daemon", "--config", path})
			}
			for _, args := range runs {
				stdout, stderr, _ := execute(t, args...)
				for _, s := range forms(secrets) {
					for name, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
						if i := strings.Index(out, s); i >= 0 {
							t.Errorf("%s typed into %s: `%s` prints it on %s: %s", label(s), k, strings.Join(args[:len(args)-1], " "), name, around(out, i))
						}
					}
				}
			}
		}
	}
}

// forms are secrets as they can stand in an output: as typed, quoted by %q, JSON-encoded, both.
func forms(secrets []string) []string {
	var out []string
	for _, s := range secrets {
		q := strconv.Quote(s)
		q = q[1 : len(q)-1]
		out = append(out, s, q, jsonInner(s), jsonInner(q))
	}
	return out
}

func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func label(s string) string {
	if strings.HasPrefix(s, "ghp_") {
		return "a token"
	}
	return "a secret file's content"
}

// around is the output near index i, for a failure message that shows where the secret stood.
func around(out string, i int) string {
	from, to := max(i-80, 0), min(i+80, len(out))
	return strings.ReplaceAll(out[from:to], "\n", "⏎")
}
