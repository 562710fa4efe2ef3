package journal

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// t0 is when the contacts of these tests begin.
var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// TestGitHubContactPerAccount: each account keeps its own last contact, so one account's broken
// credential is not hidden by another's answers; the host-wide key stays the newest of all, as an
// older binary reads it; neither moves back, and both survive a reopen.
func TestGitHubContactPerAccount(t *testing.T) {
	ctx, dir := context.Background(), t.TempDir()
	j := openTest(t, dir, newFakeClock())
	for _, r := range []struct {
		account string
		at      time.Time
	}{
		{"default", t0},
		{"globex", t0.Add(2 * time.Minute)},
		{"default", t0.Add(time.Minute)},
		{"globex", t0.Add(time.Second)},       // older than globex's own: ignored
		{"default", t0.Add(-time.Hour)},       // older than both: ignored
		{"initech", t0.Add(90 * time.Second)}, // newer than its own (none), older than the host's
		{"default", t0.Add(30 * time.Second)}, // older than default's own
	} {
		if err := j.RecordGitHubContact(ctx, r.account, r.at); err != nil {
			t.Fatalf("record %s %v: %v", r.account, r.at, err)
		}
	}
	if err := j.RecordGitHubContact(ctx, "", t0); err == nil {
		t.Fatal("a contact without account was accepted")
	}
	want := map[string]time.Time{"default": t0.Add(time.Minute), "globex": t0.Add(2 * time.Minute), "initech": t0.Add(90 * time.Second)}
	check := func(when string) {
		t.Helper()
		c, err := j.GitHubContacts(ctx)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if !c.Newest.Equal(t0.Add(2*time.Minute)) || len(c.ByAccount) != len(want) {
			t.Fatalf("%s: contacts = %+v, want newest %v and %v", when, c, t0.Add(2*time.Minute), want)
		}
		for a, at := range want {
			if !c.ByAccount[a].Equal(at) || !c.Of(a).Equal(at) {
				t.Fatalf("%s: %s's contact = %v (Of %v), want %v", when, a, c.ByAccount[a], c.Of(a), at)
			}
		}
		if last, err := j.LastGitHubContact(ctx); err != nil || !last.Equal(c.Newest) {
			t.Fatalf("%s: LastGitHubContact = %v, %v; want the newest of all, %v", when, last, err, c.Newest)
		}
	}
	check("open")
	_ = j.Close()
	j = openTest(t, dir, newFakeClock())
	check("after reopen")
}

// TestGitHubContactOfAnOlderJournal: a journal written before contacts were kept per account holds
// only the host-wide key; it opens (no schema change) and reads as no account's own time, each
// falling back to the host-wide one. The first per-account record then keeps it.
func TestGitHubContactOfAnOlderJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j := openTest(t, dir, newFakeClock())
	_ = j.Close()
	rawSet(t, dir, "meta/github_contact", t0.Format(time.RFC3339Nano))
	j = openTest(t, dir, newFakeClock())
	c, err := j.GitHubContacts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ByAccount) != 0 || !c.Newest.Equal(t0) || !c.Of("default").Equal(t0) || !c.Of("globex").Equal(t0) {
		t.Fatalf("contacts of an older journal = %+v, want none by account and every account falling back to %v", c, t0)
	}
	if err := j.RecordGitHubContact(ctx, "globex", t0.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c, err = j.GitHubContacts(ctx); err != nil || !c.Newest.Equal(t0) || !c.Of("globex").Equal(t0.Add(-time.Minute)) || !c.Of("default").Equal(t0) {
		t.Fatalf("after globex's first record: %+v, %v", c, err)
	}
}

// TestGitHubContactConcurrentAccounts: loops of several accounts recording at once leave each
// account its newest and the host-wide key the newest of all (run with -race).
func TestGitHubContactConcurrentAccounts(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, t.TempDir(), newFakeClock())
	const accounts, records = 4, 20
	var wg sync.WaitGroup
	for a := range accounts {
		wg.Go(func() {
			for i := range records {
				if err := j.RecordGitHubContact(ctx, fmt.Sprintf("a%d", a), t0.Add(time.Duration(a*records+i)*time.Second)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	c, err := j.GitHubContacts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for a := range accounts {
		if want := t0.Add(time.Duration(a*records+records-1) * time.Second); !c.ByAccount[fmt.Sprintf("a%d", a)].Equal(want) {
			t.Fatalf("a%d = %v, want %v", a, c.ByAccount[fmt.Sprintf("a%d", a)], want)
		}
	}
	if want := t0.Add(time.Duration(accounts*records-1) * time.Second); !c.Newest.Equal(want) {
		t.Fatalf("newest = %v, want %v", c.Newest, want)
	}
}
