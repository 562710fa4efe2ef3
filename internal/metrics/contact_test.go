package metrics

import (
	"maps"
	"testing"
	"time"
)

// TestGitHubContactIsPerAccount: each account's last contact is its own series, so one account's
// outage shows while another answers; an account not contacted since the start shows the
// journal's time; an account the source no longer names (removed by a reload) has no series,
// even when a late answer of its old client arrives.
func TestGitHubContactIsPerAccount(t *testing.T) {
	m := New("test")
	accounts := []string{DefaultAccount, "globex", "initech"}
	m.SetContactAccountSource(func() []string { return accounts })
	m.RestoreGitHubContact(func(string) time.Time { return t0 })
	m.GitHubContact(DefaultAccount, t0.Add(time.Minute))
	m.GitHubContact("globex", t0.Add(2*time.Minute))
	m.GitHubContact("globex", t0.Add(time.Second)) // an older answer arriving late never moves it back
	secs := func(d time.Duration) float64 { return unixSeconds(t0.Add(d)) }
	for _, step := range []struct {
		name string
		do   func()
		want map[string]float64
	}{
		{"each account its own", func() {},
			map[string]float64{DefaultAccount: secs(time.Minute), "globex": secs(2 * time.Minute), "initech": secs(0)}},
		{"globex removed by a reload", func() { accounts = []string{DefaultAccount, "initech"} },
			map[string]float64{DefaultAccount: secs(time.Minute), "initech": secs(0)}},
		{"a late answer of the removed account", func() { m.GitHubContact("globex", t0.Add(3*time.Minute)) },
			map[string]float64{DefaultAccount: secs(time.Minute), "initech": secs(0)}},
		{"an empty journal", func() { m.RestoreGitHubContact(nil) },
			map[string]float64{DefaultAccount: secs(time.Minute), "initech": 0}},
		// The journal keeps each account's own: initech's broken credential shows its own age,
		// not the host's newest; an account without its own falls back to the host's.
		{"a journal by account", func() {
			accounts = []string{DefaultAccount, "initech", "umbrella"}
			own := map[string]time.Time{"initech": t0.Add(-time.Hour), DefaultAccount: t0}
			m.RestoreGitHubContact(func(account string) time.Time {
				if t, ok := own[account]; ok {
					return t
				}
				return t0.Add(5 * time.Minute)
			})
		}, map[string]float64{DefaultAccount: secs(time.Minute), "initech": secs(-time.Hour), "umbrella": secs(5 * time.Minute)}},
	} {
		step.do()
		if got := contactSeries(t, m); !maps.Equal(got, step.want) {
			t.Errorf("%s: contact by account %v, want %v", step.name, got, step.want)
		}
	}
	m.SetContactAccountSource(nil)
	if got := contactSeries(t, m); len(got) != 0 {
		t.Errorf("with no source: %v, want no series", got)
	}
}

// contactSeries is the scraped last-contact gauge, by account.
func contactSeries(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != Namespace+"_github_last_successful_contact_timestamp_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			if l := s.GetLabel(); len(l) == 1 && l[0].GetName() == "account" {
				out[l[0].GetValue()] = s.GetGauge().GetValue()
			} else {
				t.Errorf("a contact series labelled %v, want account only", l)
			}
		}
	}
	return out
}
