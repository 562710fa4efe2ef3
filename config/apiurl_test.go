package config

import (
	"strings"
	"testing"
)

// A GitHub Enterprise Server api_url without /api/v3 is completed, with a notice; every other
// kind of host is kept as written.
func TestEnterpriseAPIURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://ghes.example", "https://ghes.example/api/v3"},
		{"https://ghes.example/", "https://ghes.example/api/v3"},
		{"https://ghes.example:8443", "https://ghes.example:8443/api/v3"},
		{"https://GHES.example/api/v3", ""},
		{"https://ghes.example/api/v3/", ""},
		{"https://api.github.com", ""},
		{"https://api.github.com/", ""},
		{"https://github.com", ""},
		{"https://api.acme.ghe.com", ""},
		{"https://acme.ghe.com", ""},
		{"http://127.0.0.1:8787", ""}, // the simulator serves GitHub's paths at its root
		{"http://[::1]:8787/", ""},
		{"http://localhost:8787", ""},
	} {
		got, changed := enterpriseAPIURL(tc.in)
		if changed != (tc.want != "") || (changed && got != tc.want) || (!changed && got != tc.in) {
			t.Errorf("enterpriseAPIURL(%q) = %q, %v; want %q", tc.in, got, changed, tc.want)
		}
	}
}

func TestLoadNormalizesGHESURL(t *testing.T) {
	cfg, err := loadIn(t, "c.toml", "[github]\napi_url = \"https://ops:hunter2@ghes.example\"\n"+auth)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GitHub.APIURL != "https://ops:hunter2@ghes.example/api/v3" {
		t.Fatalf("api_url = %q", cfg.GitHub.APIURL)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].String(), "c.toml:2:1: warning: github.api_url \"https://<redacted>@ghes.example\" has no API path; runner-manager uses \"https://<redacted>@ghes.example/api/v3\"") {
		t.Fatalf("warnings = %v", cfg.Warnings)
	}
	if cfg, err := loadIn(t, "c.toml", "[github]\napi_url = \"https://ghes.example/api/v3\"\n"+auth); err != nil || len(cfg.Warnings) != 0 {
		t.Fatalf("a complete GHES URL: %v, warnings %v", err, cfg.Warnings)
	}
}
