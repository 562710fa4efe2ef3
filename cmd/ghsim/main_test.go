package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/readiness"
)

// TestRunServesAndWritesToken starts ghsim on a free port, reads the printed URL, and uses the
// token it wrote against a pre-created repository; with --ghes the REST API is under /api/v3.
func TestRunServesAndWritesToken(t *testing.T) {
	for _, c := range []struct {
		name, api string
		args      []string
	}{{"github.com", "", nil}, {"ghes", "/api/v3", []string{"--ghes"}}} {
		t.Run(c.name, func(t *testing.T) { testRunServes(t, c.api, c.args...) })
	}
}

func testRunServes(t *testing.T, api string, extra ...string) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, append([]string{"--listen", "127.0.0.1:0", "--repo", "acme/api", "--token-file", tokFile}, extra...), pw)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	lines := bufio.NewScanner(pr)
	var url string
	for url == "" && lines.Scan() {
		if u, ok := readiness.ParseSim(lines.Text()); ok {
			url = u
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if url == "" {
		t.Fatal("no URL printed")
	}
	st, err := os.Stat(tokFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	tok, _ := os.ReadFile(tokFile)
	req, _ := http.NewRequest(http.MethodGet, url+api+"/repos/acme/api/actions/runners", nil)
	req.Header.Set("Authorization", "token "+strings.TrimSpace(string(tok)))
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("runners with the written token: %d", resp.StatusCode)
	}
}

func TestRunRejectsBadRepo(t *testing.T) {
	err := run(context.Background(), []string{"--listen", "127.0.0.1:0", "--repo", "noslash"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "owner/name") {
		t.Fatalf("err = %v", err)
	}
}
