package config

import (
	"net/url"
	"strings"

	gh "github.com/google/go-github/v62/github"
)

// enterpriseAPIURL is api_url as go-github's GitHub Enterprise handling (WithEnterpriseURLs) reads
// it: a GitHub Enterprise Server host whose URL lacks the API path gets /api/v3, without which
// every call 404s. github.com, GHE.com (api.SUBDOMAIN.ghe.com) and loopback hosts (the simulator,
// a local proxy or test double, which serve GitHub's paths at their root) are kept as written.
// changed is false when nothing but a trailing slash would differ.
func enterpriseAPIURL(raw string) (normalized string, changed bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw, false
	}
	host := strings.ToLower(u.Hostname())
	if host == "github.com" || host == "api.github.com" || strings.HasSuffix(host, ".ghe.com") || isLoopback(host) {
		return raw, false
	}
	c, err := gh.NewClient(nil).WithEnterpriseURLs(raw, raw)
	if err != nil {
		return raw, false
	}
	norm := strings.TrimSuffix(c.BaseURL.String(), "/")
	if norm == strings.TrimSuffix(raw, "/") {
		return raw, false
	}
	return norm, true
}
