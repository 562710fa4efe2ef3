package doctor

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/internal/verify"
)

// Clock skew bounds against GitHub's Date header. GitHub refuses an App's JWT issued in its future
// and expires JIT configs and tokens by its own clock; the App transport backdates its JWTs 60 s,
// so beyond that the credential fails, and a few seconds already shift every expiry the daemon plans.
const (
	SkewWarn = 10 * time.Second
	SkewFail = 60 * time.Second
)

// checkOnline runs internal/verify (what `runner-manager verify` checks: the credential, each
// target's permissions, repository and runner group) and measures the clock against GitHub's.
func checkOnline(ctx context.Context, e *Env) []Finding {
	if e.Online == nil {
		f := Finding{Check: "github", Status: Skip, Detail: e.OfflineWhy}
		if e.OfflineProblem != "" {
			f.Status, f.Problem, f.Do = Fail, e.OfflineProblem, "runner-manager auth login, or fix github.token_file / the App key files"
		}
		return []Finding{f, {Check: "clock skew", Status: Skip, Detail: "needs GitHub's Date header: " + e.OfflineWhy}}
	}
	rep, date, err := e.Online(ctx)
	if err != nil {
		return []Finding{{Check: "github", Status: Fail, Problem: verify.ProblemUnavailable, Detail: err.Error(), Do: "check the host's network path to github.api_url; try again"}}
	}
	var out []Finding
	for _, t := range rep.Targets {
		out = append(out, targetFinding(t))
	}
	if len(rep.Targets) == 0 {
		out = append(out, Finding{Check: "github", Status: Skip, Detail: "no enabled target to verify"})
	}
	for _, w := range rep.Warnings {
		out = append(out, Finding{Check: "github", Status: Warn, Detail: w})
	}
	return append(out, skewFinding(e.Now(), date))
}

// targetFinding is one target's verify report in one line: its first failure, else its first
// warning, else how many checks passed. `runner-manager verify` shows every line.
func targetFinding(t verify.Target) Finding {
	f := Finding{Check: "github", Subject: t.Name, Status: OK, Detail: fmt.Sprintf("%d checks passed (%s with %s)", len(t.Checks), t.Scope, t.Credential)}
	var warned bool
	for _, c := range t.Checks {
		switch {
		case c.Status == verify.Fail:
			f.Status, f.Problem, f.Detail = Fail, c.Problem, c.Name+": "+c.Detail
			f.Do = "runner-manager verify --target " + t.Name + " shows every check"
			return f
		case c.Status == verify.Warn && !warned:
			warned, f.Status, f.Detail = true, Warn, c.Name+": "+c.Detail
		}
	}
	return f
}

// skewFinding compares now with the Date GitHub sent (second resolution, so under a second is noise).
func skewFinding(now, date time.Time) Finding {
	f := Finding{Check: "clock skew"}
	if date.IsZero() {
		f.Status, f.Detail = Warn, "GitHub's answers carried no Date header to compare with"
		return f
	}
	skew := now.Sub(date).Truncate(time.Second)
	ahead := "ahead of"
	if skew < 0 {
		skew, ahead = -skew, "behind"
	}
	f.Detail = fmt.Sprintf("%s %s GitHub", skew, ahead)
	switch {
	case skew >= SkewFail:
		f.Status, f.Do = Fail, "synchronise the clock (timedatectl set-ntp true, or chrony): GitHub refuses App tokens and expires JIT configs by its own clock"
	case skew >= SkewWarn:
		f.Status, f.Do = Warn, "synchronise the clock (timedatectl set-ntp true, or chrony)"
	default:
		f.Status = OK
	}
	return f
}

// DateRecorder is the transport doctor gives the GitHub client: it keeps the Date header of the
// last answer, so the clock is compared through the same client and requests verify makes.
type DateRecorder struct {
	Next http.RoundTripper // nil: http.DefaultTransport

	mu   sync.Mutex
	last time.Time
}

func (d *DateRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	next := d.Next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err == nil {
		if t, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			d.mu.Lock()
			d.last = t
			d.mu.Unlock()
		}
	}
	return resp, err
}

// Last is the Date of the last answer that had one (zero: none).
func (d *DateRecorder) Last() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}
