package github

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/github/auth"
)

// wireFunc answers every request with a fresh 200 and ETag, counting bodies sent.
type wireFunc func(*http.Request) (*http.Response, error)

func (f wireFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestETagCacheIsBounded(t *testing.T) {
	body := strings.Repeat("x", 100)
	wire := wireFunc(func(r *http.Request) (*http.Response, error) {
		h := http.Header{}
		h.Set("ETag", `"`+r.URL.Path+`"`)
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
	for _, tc := range []struct{ max, maxBytes, wantMax int }{{10, 1 << 20, 10}, {1000, 550, 5}} {
		c := newETagCache(wire, tc.max, tc.maxBytes)
		for i := 0; i < 100; i++ {
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1/x/%d", i), nil)
			resp, err := c.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := io.ReadAll(resp.Body); string(b) != body {
				t.Fatal("cached response body altered")
			}
		}
		if len(c.entries) > tc.wantMax || c.bytes > tc.maxBytes || c.bytes != len(c.entries)*len(body) {
			t.Fatalf("max %d/%d B: %d entries, %d bytes", tc.max, tc.maxBytes, len(c.entries), c.bytes)
		}
	}
}

// TestRedirectToAnotherHostCarriesNoCredential: GitHub's answer (or anything posing as it) may
// redirect; only api_url's host ever receives the token. A same-host redirect still carries it.
func TestRedirectToAnotherHostCarriesNoCredential(t *testing.T) {
	const token = "ghp_redirecttest0123456789abcdef"
	seen := make(chan string, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- "other " + r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"total_count":0,"runners":[]}`)
	}))
	defer other.Close()
	var api *httptest.Server
	api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- "api " + r.Header.Get("Authorization")
		if r.URL.Query().Get("hop") == "" {
			http.Redirect(w, r, api.URL+r.URL.Path+"?hop=1", http.StatusFound) // same host first
			return
		}
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusFound)
	}))
	defer api.Close()
	c, err := New(Options{APIURL: api.URL, Auth: auth.Static{Value: token, Name: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.ListRunners(t.Context(), Scope{Owner: "acme", Repo: "web"})
	close(seen)
	var got []string
	for s := range seen {
		got = append(got, s)
	}
	want := []string{"api Bearer " + token, "api Bearer " + token, "other "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("requests seen %q, want %q: the credential must not cross to another host", got, want)
	}
}
