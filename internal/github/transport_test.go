package github

import (
	"crypto/sha256"
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

// The cache holds the working set whatever its count (issue 16: 4,096 entries evicted live ones at
// 1,400 targets): 15,000 URLs (5,000 idle targets x 3) are all answered 304 on the second round.
// Its only bound is memory; over it, the least recently used entries go first.
func TestETagCacheHoldsTheWorkingSetAndIsBoundedByBytes(t *testing.T) {
	body := strings.Repeat("x", 100)
	sent200 := 0
	wire := wireFunc(func(r *http.Request) (*http.Response, error) {
		h := http.Header{}
		etag := `"` + r.URL.Path + `"`
		h.Set("ETag", etag)
		h.Set("X-Not-Kept", strings.Repeat("y", 500))
		if r.Header.Get("If-None-Match") == etag {
			return &http.Response{StatusCode: http.StatusNotModified, Header: h, Body: http.NoBody, Request: r}, nil
		}
		sent200++
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
	get := func(c *etagCache, i int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1/x/%d", i), nil)
		resp, err := c.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != body {
			t.Fatal("cached response body altered")
		}
	}
	c := newETagCache(wire, etagCacheBytes)
	const urls = 15000
	for round := range 2 {
		for i := range urls {
			get(c, i)
		}
		if round == 0 && sent200 != urls {
			t.Fatalf("first round: %d full answers, want %d", sent200, urls)
		}
	}
	if sent200 != urls {
		t.Fatalf("second round re-fetched %d of %d URLs in full: entries were evicted", sent200-urls, urls)
	}
	if per := c.bytes / len(c.entries); per > 400 {
		t.Fatalf("%d bytes an entry: headers nobody reads are kept", per)
	}
	for _, el := range c.entries {
		if b := el.Value.(*cached).body; cap(b) > 2*len(b) {
			t.Fatalf("an entry of a %d-byte body holds a buffer of %d bytes (io.ReadAll's)", len(b), cap(b))
		}
	}

	small := newETagCache(wire, 5*entrySize(&cached{etag: `"/x/0"`, header: http.Header{"Etag": {`"/x/0"`}}, body: []byte(body)}))
	for i := range 100 {
		get(small, i)
	}
	get(small, 99) // the most recent stays
	if len(small.entries) > 5 || small.bytes > small.maxBytes {
		t.Fatalf("bounded cache: %d entries, %d bytes (max %d)", len(small.entries), small.bytes, small.maxBytes)
	}
	if _, ok := small.entries[sha256.Sum256([]byte("http://127.0.0.1/x/99\x00"))]; !ok {
		t.Fatal("the most recently used entry was evicted")
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
