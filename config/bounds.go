package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

// Upper bounds on every number in the file, so that a slip of a few digits is rejected instead of
// launching thousands of runners or waiting for years. Each has a row in TestBounds.
const (
	// MaxRunnersLimit bounds daemon.max_runners and every target's max_runners.
	MaxRunnersLimit = 1000
	// MaxDuration bounds every duration but those with a bound of their own (durationLimits).
	MaxDuration = 30 * 24 * time.Hour
	// MaxShutdownDrainTimeout bounds daemon.shutdown_drain_timeout: a stop must end.
	MaxShutdownDrainTimeout = time.Hour
	// MaxReloadSettle bounds daemon.reload_settle: an edit should show within a minute.
	MaxReloadSettle = time.Minute
)

// durationLimits are the durations bounded below MaxDuration, by their key (last path element).
var durationLimits = map[string]time.Duration{
	"shutdown_drain_timeout": MaxShutdownDrainTimeout,
	"reload_settle":          MaxReloadSettle,
}

// durationLimit is the upper bound of the duration at path.
func durationLimit(path string) time.Duration {
	if d, ok := durationLimits[path[strings.LastIndexByte(path, '.')+1:]]; ok {
		return d
	}
	return MaxDuration
}

// formatLimit writes a bound as the operator would ("720h (30 days)", "1h", "1m").
func formatLimit(d time.Duration) string {
	s := strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
	if d >= 48*time.Hour && d%(24*time.Hour) == 0 {
		s += fmt.Sprintf(" (%d days)", d/(24*time.Hour))
	}
	return s
}

// tooLarge is the message for a value past its bound; written names the value as found.
func tooLarge(path, limit, written string) string {
	return fmt.Sprintf("%s is too large: at most %s (got %s)", display(path), limit, written)
}

// checkDurationBound reports a duration past its bound.
func (c *checker) checkDurationBound(path string, d Duration) {
	if limit := durationLimit(path); d.D() > limit {
		c.add(SeverityError, path, tooLarge(path, formatLimit(limit), d.String()))
	}
}

// checkDuration reports a duration shorter than least (with least 0: a negative one) or past its
// bound.
func (c *checker) checkDuration(path string, d Duration, least time.Duration) {
	switch {
	case least == 0 && d < 0:
		c.add(SeverityError, path, fmt.Sprintf("%s must not be negative (got %s)", display(path), d))
	case d.D() < least:
		c.add(SeverityError, path, fmt.Sprintf("%s must be at least %s (got %s)", display(path), least, d))
	}
	c.checkDurationBound(path, d)
}

// checkJobBound reports a max_job_duration that is negative or past its bound (0s is off).
func (c *checker) checkJobBound(path string, d Duration) {
	if d < 0 {
		c.add(SeverityError, path, fmt.Sprintf("%s must not be negative (got %s); 0s turns the bound off", display(path), d))
	}
	c.checkDurationBound(path, d)
}

// checkCountBound reports a runner count past MaxRunnersLimit.
func (c *checker) checkCountBound(path string, n int) {
	if n > MaxRunnersLimit {
		c.add(SeverityError, path, tooLarge(path, fmt.Sprint(MaxRunnersLimit), fmt.Sprint(n)))
	}
}

// durationSyntax is what time.ParseDuration accepts, so a string that matches it and still fails
// to parse overflowed (time.Duration ends at about 292 years) rather than being malformed.
var durationSyntax = regexp.MustCompile(`^[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`)

// errTooLarge marks a duration string beyond what time.Duration holds.
type errTooLarge struct{ written string }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("%q is too large for a duration", e.written)
}

// outOfRange reports whether a parsed number is a whole number beyond int64, and its sign.
func outOfRange(v any) (bool, string) {
	switch n := v.(type) {
	case uint64:
		return n > math.MaxInt64, "too large"
	case float64:
		if n == math.Trunc(n) && (n > math.MaxInt64 || n < math.MinInt64) {
			if n < 0 {
				return true, "too small"
			}
			return true, "too large"
		}
	}
	return false, ""
}

// durationProblem phrases a parseDuration failure at path.
func durationProblem(path string, err error) string {
	var big errTooLarge
	if errors.As(err, &big) {
		return tooLarge(path, formatLimit(durationLimit(path)), fmt.Sprintf("%q", big.written))
	}
	return fmt.Sprintf("%s: %v", display(path), err)
}
