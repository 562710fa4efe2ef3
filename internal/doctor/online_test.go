package doctor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/verify"
)

func TestSkewFinding(t *testing.T) {
	now := testNow
	tests := []struct {
		name   string
		date   time.Time
		status Status
		detail string
	}{
		{"in step", now.Add(-400 * time.Millisecond), OK, "0s ahead of GitHub"},
		{"a little ahead", now.Add(-15 * time.Second), Warn, "15s ahead of GitHub"},
		{"far behind", now.Add(2 * time.Minute), Fail, "2m0s behind GitHub"},
		{"exactly the fail bound", now.Add(-SkewFail), Fail, "1m0s ahead"},
		{"no Date header", time.Time{}, Warn, "no Date header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := skewFinding(now, tt.date)
			if f.Status != tt.status || !strings.Contains(f.Detail, tt.detail) {
				t.Errorf("got %+v, want %s %q", f, tt.status, tt.detail)
			}
		})
	}
}

func TestTargetFinding(t *testing.T) {
	tests := []struct {
		name    string
		checks  []verify.Check
		status  Status
		problem verify.Problem
	}{
		{"all pass", []verify.Check{{Name: "credential", Status: verify.OK}}, OK, ""},
		{"a warning", []verify.Check{{Name: "rate", Status: verify.Warn, Detail: "low"}}, Warn, ""},
		{"first failure wins", []verify.Check{{Name: "rate", Status: verify.Warn}, {Name: "group", Status: verify.Fail, Problem: verify.ProblemAccess}}, Fail, verify.ProblemAccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := targetFinding(verify.Target{Name: "api", Checks: tt.checks})
			if f.Status != tt.status || f.Problem != tt.problem || f.Subject != "api" {
				t.Errorf("got %+v", f)
			}
		})
	}
}

// TestCheckOnline: verify's report and the clock through one call; skipped or failed when offline.
func TestCheckOnline(t *testing.T) {
	now := func() time.Time { return testNow }
	tests := []struct {
		name    string
		e       Env
		want    []Status
		problem verify.Problem
	}{
		{name: "--offline", e: Env{OfflineWhy: "--offline"}, want: []Status{Skip, Skip}},
		{name: "no credential", e: Env{OfflineWhy: "no usable GitHub credential", OfflineProblem: verify.ProblemCredential}, want: []Status{Fail, Skip}, problem: verify.ProblemCredential},
		{name: "verified, clock skewed", e: Env{Online: func(context.Context) (verify.Report, time.Time, error) {
			return verify.Report{Targets: []verify.Target{{Name: "api", Checks: []verify.Check{{Status: verify.OK}}}}, Warnings: []string{"budget"}}, testNow.Add(-90 * time.Second), nil
		}}, want: []Status{OK, Warn, Fail}},
		{name: "unreachable", e: Env{Online: func(context.Context) (verify.Report, time.Time, error) {
			return verify.Report{}, time.Time{}, errors.New("dial tcp: refused")
		}}, want: []Status{Fail}, problem: verify.ProblemUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.e.Now = now
			fs := checkOnline(t.Context(), &tt.e)
			if len(fs) != len(tt.want) {
				t.Fatalf("got %+v, want %v", fs, tt.want)
			}
			for i, f := range fs {
				if f.Status != tt.want[i] {
					t.Errorf("finding %d: %+v, want %s", i, f, tt.want[i])
				}
			}
			if p, _ := (Report{Findings: fs}).Worst(); p != tt.problem {
				t.Errorf("worst = %q, want %q", p, tt.problem)
			}
		})
	}
}

func TestWorst(t *testing.T) {
	fail := func(p verify.Problem) Finding { return Finding{Status: Fail, Problem: p} }
	tests := []struct {
		name   string
		fs     []Finding
		want   verify.Problem
		failed bool
	}{
		{"nothing failed", []Finding{{Status: Warn}, {Status: OK}}, "", false},
		{"the credential first", []Finding{fail(""), fail(verify.ProblemCredential)}, verify.ProblemCredential, true},
		{"a host failure before access", []Finding{fail(verify.ProblemAccess), fail(""), fail(verify.ProblemUnavailable)}, "", true},
		{"credential before access", []Finding{fail(verify.ProblemUnavailable), fail(verify.ProblemCredential), fail(verify.ProblemAccess)}, verify.ProblemCredential, true},
		{"unavailable alone", []Finding{fail(verify.ProblemUnavailable)}, verify.ProblemUnavailable, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, failed := Report{Findings: tt.fs}.Worst()
			if p != tt.want || failed != tt.failed {
				t.Errorf("Worst = %q, %v; want %q, %v", p, failed, tt.want, tt.failed)
			}
		})
	}
}

func TestDateRecorderKeepsTheLastDate(t *testing.T) {
	stamp := time.Date(2026, 12, 6, 2, 59, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Date", stamp.Format(http.TimeFormat))
	}))
	defer srv.Close()
	d := &DateRecorder{}
	resp, err := (&http.Client{Transport: d}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !d.Last().Equal(stamp) {
		t.Errorf("Last = %v, want %v", d.Last(), stamp)
	}
}
