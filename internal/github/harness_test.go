package github

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
	"github.com/runner-manager/runner-manager/internal/github/auth"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

// sim is one simulator plus a client sharing its fake clock. Sleeps advance that clock and are
// recorded, so waits are asserted exactly and never taken for real.
type sim struct {
	t      *testing.T
	srv    *ghsim.Server
	clock  *ghsim.FakeClock
	token  string
	logs   *livetest.Buffer
	logger *slog.Logger

	mu       sync.Mutex
	sleeps   []time.Duration
	requests []RequestInfo
	contacts []time.Time
}

// simStart is near the wall clock because ghinstallation signs App JWTs with time.Now and the
// simulator checks them against its own clock.
var simStart = time.Now().Truncate(time.Second)

func newSim(t *testing.T) *sim { t.Helper(); return newSimOpts(t, ghsim.Options{}) }

func newSimOpts(t *testing.T, opts ghsim.Options) *sim {
	t.Helper()
	clock := ghsim.NewFakeClock(simStart)
	opts.Clock = clock
	srv := ghsimtest.Start(t, opts)
	s := &sim{t: t, srv: srv, clock: clock, logs: &livetest.Buffer{}}
	s.logger = slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv.CreateOrg("acme")
	srv.CreateRepo("acme", "api")
	s.token = srv.AddToken(ghsim.TokenOptions{Login: "octocat"})
	return s
}

func (s *sim) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.sleeps = append(s.sleeps, d)
	s.mu.Unlock()
	s.clock.Advance(d)
	return nil
}

func (s *sim) Sleeps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.sleeps...)
}

func (s *sim) Requests() []RequestInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RequestInfo(nil), s.requests...)
}

func (s *sim) options() Options {
	return Options{
		APIURL: s.srv.URL(), Clock: s.clock, Sleep: s.sleep, Logger: s.logger, RetryBase: time.Second,
		Observer: func(ri RequestInfo) {
			s.mu.Lock()
			s.requests = append(s.requests, ri)
			s.mu.Unlock()
		},
		Contacted: func(at time.Time) {
			s.mu.Lock()
			s.contacts = append(s.contacts, at)
			s.mu.Unlock()
		},
	}
}

// tokenClient is a client on a token file holding tok.
func (s *sim) tokenClient(tok string) (*Client, string) {
	s.t.Helper()
	path := writeToken(s.t, tok)
	c, err := NewFromConfig(config.GitHub{APIURL: s.srv.URL(), TokenFile: path}, s.t.TempDir(), s.options())
	if err != nil {
		s.t.Fatal(err)
	}
	return c, path
}

func writeToken(t *testing.T, tok string) string {
	t.Helper()
	path := t.TempDir() + "/token"
	if err := writeFile(path, tok); err != nil {
		t.Fatal(err)
	}
	return path
}

var repoScope = Scope{Owner: "acme", Repo: "api"}

var _ auth.Source = (*auth.TokenFile)(nil)

// takeJob plays the fake runner's protocol for jit: come online and take one queued job.
func takeJob(t *testing.T, s *sim, jit JITConfig) {
	t.Helper()
	cfg, err := runnerproto.Decode(jit.Encoded)
	if err != nil {
		t.Fatal(err)
	}
	hello, _ := json.Marshal(runnerproto.Hello{RunnerID: cfg.RunnerID, Credential: cfg.Credential})
	for _, p := range []string{"/_ghsim/runner/connect", "/_ghsim/runner/acquire"} {
		resp, err := http.Post(s.srv.URL()+p, "application/json", bytes.NewReader(hello))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
	}
}

// clientWith is a token-file client on the sim's token with custom options.
func (s *sim) clientWith(o Options) *Client {
	s.t.Helper()
	c, err := NewFromConfig(config.GitHub{APIURL: s.srv.URL(), TokenFile: writeToken(s.t, s.token)}, s.t.TempDir(), o)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}
