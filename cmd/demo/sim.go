package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// simClient speaks the simulator's admin API (/_ghsim/admin/, documented in docs/simulator.md).
// It reuses ghsim's snapshot types, whose JSON the admin API serves.
type simClient struct {
	base string // http://127.0.0.1:port
	http *http.Client
}

func newSimClient(base string) *simClient {
	return &simClient{base: strings.TrimSuffix(base, "/"), http: &http.Client{Timeout: 5 * time.Second}}
}

// snapshot is what one poll of the simulator sees.
type snapshot struct {
	Jobs          []ghsim.Job
	Runners       []ghsim.Runner
	Registrations []ghsim.Registration
}

// call sends one admin request; in (if not nil) is the JSON body, out (if not nil) receives the answer.
func (c *simClient) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("simulator %s %s: encode request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/_ghsim/admin"+path, body)
	if err != nil {
		return fmt.Errorf("simulator %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("simulator %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("simulator %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("simulator %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("simulator %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// createRepo creates owner/name (and its owner, as an organisation).
func (c *simClient) createRepo(ctx context.Context, repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok {
		return fmt.Errorf("repository %q is not owner/name", repo)
	}
	return c.call(ctx, http.MethodPost, "/repos", map[string]string{"owner": owner, "name": name}, nil)
}

// queueJob queues a one-job workflow run and returns the job id.
func (c *simClient) queueJob(ctx context.Context, j plannedJob) (int64, error) {
	in := map[string]any{"repo": j.Repo, "labels": j.Labels, "duration_ms": j.Duration.Milliseconds(), "name": j.Name}
	var out struct {
		ID int64 `json:"id"`
	}
	if err := c.call(ctx, http.MethodPost, "/jobs", in, &out); err != nil {
		return 0, err
	}
	return out.ID, nil
}

// poll reads jobs, registered runners and the registration history.
func (c *simClient) poll(ctx context.Context) (snapshot, error) {
	var s snapshot
	if err := c.call(ctx, http.MethodGet, "/jobs", nil, &s.Jobs); err != nil {
		return s, err
	}
	if err := c.call(ctx, http.MethodGet, "/runners", nil, &s.Runners); err != nil {
		return s, err
	}
	if err := c.call(ctx, http.MethodGet, "/registrations", nil, &s.Registrations); err != nil {
		return s, err
	}
	return s, nil
}
