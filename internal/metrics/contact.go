package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// GitHubContact records a successful answer from account's GitHub at t, keeping the newest; with
// the account bound, it fits internal/github's Options.Contacted. Each account has its own series,
// so one account's outage is not hidden while another answers.
func (m *Metrics) GitHubContact(account string, t time.Time) {
	c := m.contact
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.at[account]) {
		c.at[account] = t
	}
}

// RestoreGitHubContact sets what an account shows until its first answer since the daemon started:
// of(account), the journal's last contact of the account (journal.Contacts.Of: its own, or the
// host's from a journal written before contacts were kept per account; nil: none). So after a
// restart an alert on the contact's age keeps its memory instead of losing the series, and an
// account whose credential broke before the restart does not inherit another account's freshness.
// of must be fast and safe for concurrent use.
func (m *Metrics) RestoreGitHubContact(of func(account string) time.Time) {
	m.contact.mu.Lock()
	m.contact.restored = of
	m.contact.mu.Unlock()
}

// SetContactAccountSource makes every scrape export the last-contact gauge of exactly the accounts
// f names (the daemon: those serving an enabled target of the config in force), so an account a
// reload removes loses its series with the config that removed it, even if a request of its old
// client answers later. f must be fast, safe for concurrent use and name each account once; nil
// exports none.
func (m *Metrics) SetContactAccountSource(f func() []string) { m.contact.src.set(f) }

// contactCollector exports each account's last successful GitHub contact at collection time.
type contactCollector struct {
	desc *prometheus.Desc
	src  source[[]string]

	mu       sync.Mutex
	at       map[string]time.Time           // by account
	restored func(account string) time.Time // the journal's, for an account not contacted since the start
}

func newContactCollector() *contactCollector {
	return &contactCollector{
		desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "github", "last_successful_contact_timestamp_seconds"),
			"When a GitHub API request of the account last succeeded (Unix time; before its first since the start, its last contact kept in the journal, else the host's; 0: none known).",
			[]string{"account"}, nil),
		at: map[string]time.Time{},
	}
}

// Describe implements prometheus.Collector.
func (c *contactCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *contactCollector) Collect(ch chan<- prometheus.Metric) {
	accounts, _ := c.src.read()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, account := range accounts {
		at, ok := c.at[account]
		if !ok && c.restored != nil {
			at = c.restored(account)
		}
		v := 0.0
		if !at.IsZero() {
			v = unixSeconds(at)
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, account)
	}
}
