package config

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"
)

// checker collects the problems of one load. Paths are dotted keys with list indices
// ("target.1.max_runners"); add positions them and names the target they belong to.
type checker struct {
	file     string
	pos      positions
	env      map[string]string // path -> RUNNER_MANAGER_* variable that set it
	skip     map[string]bool   // paths already reported as malformed: rules on them stay quiet
	names    map[int]string    // target index -> name, for messages
	offline  bool              // Options.Offline: checks of the host's files are skipped
	goos     string            // Options.GOOS, else runtime.GOOS: the system the config is for
	problems []Problem
}

func newChecker(file string) *checker {
	return &checker{file: file, pos: positions{}, env: map[string]string{}, skip: map[string]bool{}, names: map[int]string{}}
}

// result is the *Error for the problems so far if any is an error, else nil.
func (c *checker) result() error {
	sortProblems(c.problems)
	for i, p := range c.problems {
		c.problems[i] = p.bounded()
	}
	for _, p := range c.problems {
		if p.Severity == SeverityError {
			return &Error{Problems: c.problems}
		}
	}
	return nil
}

// add records a problem at path. Inside a target, msg is phrased relative to it ("max_runners must
// ...") and the target's name goes in Problem.Target.
func (c *checker) add(sev Severity, path, msg string) {
	for p := path; p != ""; p = parentPath(p) {
		if c.skip[p] {
			return
		}
	}
	pr := Problem{File: c.file, Severity: sev, Key: path, Message: msg}
	if idx, ok := targetIndex(path); ok {
		if name := c.names[idx]; name != "" {
			pr.Target = name
		} else {
			pr.Message = fmt.Sprintf("target #%d: %s", idx+1, msg)
		}
	}
	if v, ok := c.env[path]; ok {
		pr.File, pr.Key = "", v
	} else {
		p := c.pos.find(path)
		pr.Line, pr.Col = p.Line, p.Col
	}
	c.problems = append(c.problems, pr)
}

func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// targetIndex returns N for paths "target.N" and "target.N.…".
func targetIndex(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "target.")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.SplitN(rest, ".", 2)[0])
	return n, err == nil
}

// display is how a path is named in a message: relative inside a target ("labels.1"), dotted
// outside ("daemon.max_runners").
func display(path string) string {
	if _, ok := targetIndex(path); ok {
		parts := strings.SplitN(path, ".", 3)
		if len(parts) == 3 {
			return parts[2]
		}
		return "the entry"
	}
	return path
}

var (
	durationType = reflect.TypeFor[Duration]()
	byteSizeType = reflect.TypeFor[ByteSize]()
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// checkShape compares the parsed document with the schema: unknown keys (koanf would ignore them,
// so a typo like max_runner would silently mean the default) and values of the wrong kind. Each bad
// value is reported and removed so that decoding cannot fail and the remaining rules still run.
func (c *checker) checkShape(raw map[string]any) {
	if ts, ok := raw["target"].([]any); ok {
		for i, t := range ts {
			if m, ok := t.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					c.names[i] = n
				}
			}
		}
	}
	c.checkStruct(raw, reflect.TypeFor[Config](), "")
}

func (c *checker) checkStruct(m map[string]any, t reflect.Type, path string) {
	fields := map[string]reflect.Type{}
	for _, f := range keyFields(t) {
		fields[f.Tag.Get("koanf")] = f.Type
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := joinPath(path, k)
		ft, known := fields[k]
		switch {
		case !known:
			msg := fmt.Sprintf("unknown key %q", display(p))
			if s := closest(k, fields); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			c.add(SeverityError, p, msg)
			delete(m, k)
		case m[k] == nil: // YAML `key:` or `key: ~` means absent
			delete(m, k)
		case !c.checkValue(m[k], ft, p):
			c.skip[p] = true
			delete(m, k)
		}
	}
}

// checkValue reports whether v has the kind t needs, reporting (and returning false) when not.
// Elements of lists and maps that are wrong are reported and dropped individually.
// keyFields are t's fields that are keys of the file, those of a squashed embedded struct
// (Account's GitHub) included as t's own; each Index reaches the field from t.
func keyFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		if tag := f.Tag.Get("koanf"); !f.Anonymous && tag != "" && tag != "-" {
			out = append(out, f)
		}
	}
	return out
}

func (c *checker) checkValue(v any, t reflect.Type, path string) bool {
	bad := func(want string) bool {
		c.add(SeverityError, path, fmt.Sprintf("%s must be %s (got %s)", display(path), want, describe(v, path)))
		return false
	}
	if t == durationType {
		s, ok := v.(string)
		if !ok {
			return bad(`a duration string such as "30s"`)
		}
		if _, err := parseDuration(s); err != nil {
			c.add(SeverityError, path, durationProblem(path, err))
			return false
		}
		return true
	}
	if t == byteSizeType {
		return c.checkSizeValue(v, path)
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float64:
		return c.checkFloatValue(v, path)
	case reflect.String:
		if _, ok := v.(string); !ok {
			return bad("a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return bad("true or false")
		}
	case reflect.Int, reflect.Int64:
		if out, word := outOfRange(v); out {
			c.add(SeverityError, path, fmt.Sprintf("%s is %s for a whole number (got %s)", display(path), word, describe(v, path)))
			return false
		}
		if !isWhole(v) {
			return bad("a whole number")
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("a table")
		}
		c.checkStruct(m, t, path)
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			if t.Elem().Kind() == reflect.Struct {
				return bad("a list of tables ([[" + path + "]] in TOML, a list in YAML)")
			}
			return bad("a list")
		}
		for i, e := range l {
			ep := path + "." + strconv.Itoa(i)
			if !c.checkValue(e, t.Elem(), ep) {
				// Keep the list's indices (and so its positions) stable: blank the element and
				// silence the rules about it instead of removing it.
				c.skip[ep] = true
				if t.Elem().Kind() == reflect.Struct {
					l[i] = map[string]any{}
				} else {
					l[i] = reflect.Zero(t.Elem()).Interface()
				}
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("a table of names to strings")
		}
		for k, e := range m {
			p := path + "." + k
			if !envName.MatchString(k) {
				c.add(SeverityError, p, fmt.Sprintf("%s: %q is not a valid environment variable name (letters, digits and _, not starting with a digit)", display(path), k))
				delete(m, k)
			} else if _, ok := e.(string); !ok {
				c.add(SeverityError, p, fmt.Sprintf("%s must be a string (got %s)", display(p), kindOf(e)))
				delete(m, k)
			}
		}
	}
	return true
}

func isWhole(v any) bool {
	switch n := v.(type) {
	case int, int64:
		return true
	case uint64:
		return n <= math.MaxInt64
	}
	return false
}

// describe names a wrong value for a message; values under env are never echoed.
func describe(v any, path string) string {
	if strings.Contains(path, ".env") {
		return kindOf(v)
	}
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", x) // bounded with the whole message (Problem.bounded)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case int, int64, uint64:
		return fmt.Sprintf("integer %v", x)
	case float64:
		return fmt.Sprintf("number %v", x)
	}
	return kindOf(v)
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64:
		return "an integer"
	case float64, float32:
		return "a number with a fraction"
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	case time.Time, toml.LocalDate, toml.LocalTime, toml.LocalDateTime:
		return "a date/time"
	}
	return fmt.Sprintf("a %T", v)
}

// closest suggests the known key within two edits of k, for "did you mean".
func closest(k string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for f := range fields {
		if max(len(k)-len(f), len(f)-len(k)) > bestD {
			continue // at least that many edits: and a 5 MB key would take seconds to measure
		}
		if d := editDistance(k, f); d < bestD || (d == bestD && f < best) {
			best, bestD = f, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// parseDuration parses a Go duration string, phrasing the failure for the operator.
func parseDuration(s string) (time.Duration, error) {
	var d Duration
	err := d.UnmarshalText([]byte(s))
	return d.D(), err
}
