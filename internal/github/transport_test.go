package github

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
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
