package scaleset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
	"github.com/runner-manager/runner-manager/internal/github"
	"github.com/runner-manager/runner-manager/internal/github/auth"
)

type fixture struct {
	srv   *ghsim.Server
	clock *ghsim.FakeClock
	c     *Client
	regs  *countingTokens
}

// countingTokens counts registration tokens minted: the only REST calls of the chain.
type countingTokens struct {
	next RegistrationTokens
	mu   sync.Mutex
	n    int
}

func (c *countingTokens) RegistrationToken(ctx context.Context, scope string) (string, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.next.RegistrationToken(ctx, scope)
}

func newFixture(t *testing.T, o ghsim.ActionsOptions) *fixture {
	t.Helper()
	clock := ghsim.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := ghsimtest.Start(t, ghsim.Options{Clock: clock, Actions: o})
	srv.CreateRepo("acme", "api")
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(srv.AddToken(ghsim.TokenOptions{})+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := auth.NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := github.New(github.Options{APIURL: srv.URL(), Auth: src})
	if err != nil {
		t.Fatal(err)
	}
	regs := &countingTokens{next: gc}
	c, err := New(Options{APIURL: srv.URL(), WebURL: "https://github.com", Scope: "acme", Tokens: regs, Now: clock.Now,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, clock: clock, c: c, regs: regs}
}

func TestTokenChainRenewsBeforeExpiry(t *testing.T) {
	f := newFixture(t, ghsim.ActionsOptions{})
	ctx := context.Background()
	for range 3 {
		if _, _, err := f.c.ScaleSetByName(ctx, 1, "linux"); err != nil {
			t.Fatal(err)
		}
	}
	if f.regs.n != 1 {
		t.Fatalf("registration tokens minted: %d, want 1 for three calls", f.regs.n)
	}
	f.clock.Advance(59 * time.Minute) // the admin token (1 h) expires within the 60 s margin
	if _, _, err := f.c.ScaleSetByName(ctx, 1, "linux"); err != nil {
		t.Fatal(err)
	}
	if f.regs.n != 2 {
		t.Errorf("registration tokens minted: %d, want a renewal before exp", f.regs.n)
	}
	if leaks := f.srv.CredentialLeaks(); len(leaks) != 0 {
		t.Errorf("credentials sent to the wrong host: %v", leaks)
	}
}

func TestScaleSetLifecycle(t *testing.T) {
	f := newFixture(t, ghsim.ActionsOptions{LongPoll: 20 * time.Millisecond, QueueTokenTTL: time.Minute, AssignTimeout: time.Hour})
	ctx := context.Background()
	set, err := f.c.CreateScaleSet(ctx, ScaleSet{Name: "linux", RunnerGroupID: 1, Labels: []string{"linux"}})
	if err != nil || set.ID == 0 {
		t.Fatalf("create: %+v %v", set, err)
	}
	if got, ok, err := f.c.ScaleSetByName(ctx, 1, "linux"); err != nil || !ok || got.ID != set.ID {
		t.Fatalf("by name: %+v %v %v", got, ok, err)
	}
	if _, err := f.c.UpdateScaleSet(ctx, set.ID, ScaleSet{Name: "linux", RunnerGroupID: 1, Labels: []string{"linux"}, DisableUpdate: true}); err != nil {
		t.Fatal(err)
	}
	s, err := f.c.CreateSession(ctx, set.ID, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.CreateSession(ctx, set.ID, "host-b"); !Is(err, ExcSessionConflict) {
		t.Fatalf("second session: %v, want %s", err, ExcSessionConflict)
	}
	if m, err := f.c.GetMessage(ctx, s, 0, 1); m != nil || err != nil {
		t.Fatalf("empty queue: %+v %v", m, err)
	}
	f.srv.QueueJob("acme/api", []string{"linux"}, -1)
	m, err := f.c.GetMessage(ctx, s, 0, 1)
	if err != nil || m == nil || len(m.Jobs) != 1 || m.Jobs[0].MessageType != "JobAssigned" || m.Statistics.TotalAssignedJobs != 1 {
		t.Fatalf("message: %+v %v", m, err)
	}
	if err := f.c.DeleteMessage(ctx, s, m.ID); err != nil {
		t.Fatal(err)
	}
	// The queue token expires: the client refreshes the session and carries on.
	f.clock.Advance(2 * time.Minute)
	if m, err := f.c.GetMessage(ctx, s, m.ID, 1); m != nil || err != nil {
		t.Fatalf("after queue-token expiry: %+v %v", m, err)
	}
	jit, err := f.c.GenerateJIT(ctx, set.ID, "r1", "")
	if err != nil || jit.Runner.ScaleSetID != set.ID {
		t.Fatalf("jit: %v %v", jit, err)
	}
	if _, err := f.c.GenerateJIT(ctx, set.ID, "r1", ""); !Is(err, ExcAgentExists) {
		t.Errorf("duplicate jit: %v", err)
	}
	if r, ok, err := f.c.RunnerByName(ctx, "r1"); err != nil || !ok || r.ID != jit.Runner.ID {
		t.Errorf("by name: %+v %v %v", r, ok, err)
	}
	if err := f.c.RemoveRunner(ctx, jit.Runner.ID); err != nil {
		t.Errorf("remove idle: %v", err)
	}
	if err := f.c.RemoveRunner(ctx, jit.Runner.ID); err != nil {
		t.Errorf("remove gone: %v, want nil", err)
	}
	if err := f.c.DeleteSession(ctx, set.ID, s.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.c.DeleteSession(ctx, set.ID, s.ID); err != nil {
		t.Errorf("second delete: %v, want nil (expired)", err)
	}
	if err := f.c.DeleteScaleSet(ctx, set.ID); err != nil {
		t.Fatal(err)
	}
	if leaks := f.srv.CredentialLeaks(); len(leaks) != 0 {
		t.Errorf("credentials sent to the wrong host: %v", leaks)
	}
}

func TestBOMAndGHESAcquire(t *testing.T) {
	f := newFixture(t, ghsim.ActionsOptions{LongPoll: 20 * time.Millisecond, GHES: true, BOM: true})
	ctx := context.Background()
	set, err := f.c.CreateScaleSet(ctx, ScaleSet{Name: "linux", RunnerGroupID: 1, Labels: []string{"linux"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.c.CreateSession(ctx, set.ID, "h")
	if err != nil {
		t.Fatal(err)
	}
	f.srv.QueueJob("acme/api", []string{"linux"}, -1)
	m, err := f.c.GetMessage(ctx, s, 0, 2)
	if err != nil || m == nil || m.Jobs[0].MessageType != "JobAvailable" {
		t.Fatalf("message: %+v %v", m, err)
	}
	got, err := f.c.AcquireJobs(ctx, s, []int64{m.Jobs[0].RunnerRequestID})
	if err != nil || len(got) != 1 {
		t.Fatalf("acquire: %v %v", got, err)
	}
}

func TestRefusesHostsTheServiceDidNotName(t *testing.T) {
	f := newFixture(t, ghsim.ActionsOptions{})
	ctx := context.Background()
	set, err := f.c.CreateScaleSet(ctx, ScaleSet{Name: "linux", RunnerGroupID: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.c.CreateSession(ctx, set.ID, "h")
	if err != nil {
		t.Fatal(err)
	}
	s.queueURL.Host = "evil.example:443"
	if _, err := f.c.GetMessage(ctx, s, 0, 1); err == nil {
		t.Fatal("sent the queue token to a host the service did not name")
	}
}

// fakeSessions plays the service for Holder: sessions by set, and a record of calls.
type fakeSessions struct {
	held   map[int64]string
	calls  []string
	n      int
	expire int // 409s while another session is held before it expires; -1: never
}

func (f *fakeSessions) CreateSession(_ context.Context, setID int64, owner string) (*Session, error) {
	f.calls = append(f.calls, "create")
	if f.held[setID] != "" && f.expire != 0 {
		if f.expire > 0 {
			f.expire--
		}
		return nil, &Error{Op: "open", Status: 409, TypeName: "GitHub.Actions.Runtime.WebApi." + ExcSessionConflict + ", GitHub.Actions.Runtime.WebApi"}
	}
	f.n++
	id := "s" + string(rune('0'+f.n))
	f.held[setID] = id
	return &Session{ID: id, SetID: setID, Owner: owner}, nil
}

func (f *fakeSessions) DeleteSession(_ context.Context, setID int64, id string) error {
	f.calls = append(f.calls, "delete "+id)
	if f.held[setID] == id {
		delete(f.held, setID)
	}
	return nil
}

type memStore struct {
	m      map[string][]byte
	writes []string
}

func (m *memStore) GetMeta(_ context.Context, k string) ([]byte, bool, error) {
	v, ok := m.m[k]
	return v, ok, nil
}

func (m *memStore) PutMeta(_ context.Context, k string, v []byte) error {
	m.m[k] = v
	m.writes = append(m.writes, string(v))
	return nil
}

func TestHolderCrashSafety(t *testing.T) {
	cases := []struct {
		name       string
		journal    string // what a previous run left
		held       string // the session the service still holds
		pred       string // the session a fleet's previous leader held (Predecessor)
		expire     int    // 409s before the stale one expires
		wantCalls  []string
		wantWaits  int
		wantErr    bool
		wantLastID string
	}{
		{"fresh start", "", "", "", 0, []string{"create"}, 0, false, "s1"},
		{"killed after the id was journaled", `{"state":"open","set_id":7,"session_id":"old"}`, "old", "", 0,
			[]string{"delete old", "create"}, 0, false, "s1"},
		{"killed between reply and journal", `{"state":"opening","set_id":7}`, "old", "", 2,
			[]string{"create", "create", "create"}, 2, false, "s1"},
		{"closed cleanly", `{"state":"closed","set_id":7}`, "", "", 0, []string{"create"}, 0, false, "s1"},
		// A fleet's leader killed with its session open: the next leader deletes it, no 409.
		{"a previous leader's session", "", "theirs", "theirs", 1, []string{"delete theirs", "create"}, 0, false, "s1"},
		{"a previous leader's session, gone already", "", "", "theirs", 0, []string{"delete theirs", "create"}, 0, false, "s1"},
		{"own session is the previous leader's", `{"state":"open","set_id":7,"session_id":"old"}`, "old", "old", 0,
			[]string{"delete old", "create"}, 0, false, "s1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := &fakeSessions{held: map[int64]string{}, expire: c.expire}
			if c.held != "" {
				svc.held[7] = c.held
			}
			st := &memStore{m: map[string][]byte{}}
			if c.journal != "" {
				st.m["scaleset/t"] = []byte(c.journal)
			}
			var waits []time.Duration
			h := &Holder{Client: svc, Store: st, Key: "scaleset/t", Owner: "host",
				Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
				Rand:  func() float64 { return 0.5 }}
			if c.pred != "" {
				h.Predecessor = func() (Record, bool) { return Record{SetID: 7, SessionID: c.pred, Owner: "host-a"}, true }
			}
			s, err := h.Open(context.Background(), 7)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v", err)
			}
			if !slices.Equal(svc.calls, c.wantCalls) {
				t.Errorf("calls %v, want %v", svc.calls, c.wantCalls)
			}
			if len(waits) != c.wantWaits {
				t.Errorf("waits %v, want %d", waits, c.wantWaits)
			}
			for _, w := range waits {
				if w < ConflictRetryMin || w > ConflictRetryMax {
					t.Errorf("wait %s outside 30-45 s", w)
				}
			}
			if s.ID != c.wantLastID {
				t.Errorf("session %s, want %s", s.ID, c.wantLastID)
			}
			// The intent is journaled before the create, the id right after.
			if len(st.writes) < 2 || st.writes[0] != `{"state":"opening","set_id":7,"owner":"host"}` ||
				st.writes[len(st.writes)-1] != `{"state":"open","set_id":7,"session_id":"`+s.ID+`","owner":"host"}` {
				t.Errorf("journal writes %v", st.writes)
			}
			if err := h.Close(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if svc.held[7] != "" {
				t.Errorf("session still held after Close")
			}
		})
	}
}

func TestHolderSecondHostWaitsWithAReason(t *testing.T) {
	svc := &fakeSessions{held: map[int64]string{7: "theirs"}, expire: -1}
	var reason string
	ctx, cancel := context.WithCancel(context.Background())
	h := &Holder{Client: svc, Store: &memStore{m: map[string][]byte{}}, Key: "k", Owner: "host-b",
		Waiting: func(r string, _ time.Duration) { reason = r },
		Sleep: func(context.Context, time.Duration) error {
			cancel()
			return context.Canceled
		}}
	if _, err := h.Open(ctx, 7); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if reason == "" || !strings.Contains(reason, "another host uses this scale set") {
		t.Errorf("reason %q", reason)
	}
}
