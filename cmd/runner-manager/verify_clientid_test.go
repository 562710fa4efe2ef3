package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/verify"
)

// TestVerifyAppClientID: verify accepts an App named by app_client_id wherever app_id works, and
// an unknown client ID fails the credential check, naming the key to fix.
func TestVerifyAppClientID(t *testing.T) {
	w := newVerifyWorldAt(t, nil)
	byID := w.app(nil)
	cred := strings.Replace(byID, "app_id = 42\n", fmt.Sprintf("app_client_id = %q\n", ghsim.AppClientID(42)), 1)
	if cred == byID {
		t.Fatal("the App's credential lines have no app_id = 42 to replace")
	}
	r, code := w.report(w.config(cred, verifyTargets))
	if code != exitOK {
		t.Fatalf("App by client ID: exit %d: %+v", code, r)
	}
	if c := check(t, r, "org", "credential"); c.Status != verify.OK || !strings.Contains(c.Detail, "GitHub App installation") {
		t.Fatalf("credential = %+v", c)
	}

	bad := strings.Replace(byID, "app_id = 42\n", fmt.Sprintf("app_client_id = %q\n", ghsim.AppClientID(99)), 1)
	r, code = w.report(w.config(bad, verifyTargets))
	if code == exitOK {
		t.Fatalf("unknown client ID: exit 0: %+v", r)
	}
	if c := check(t, r, "api", "credential"); c.Status != verify.Fail || !strings.Contains(c.Detail, "app_client_id") {
		t.Fatalf("credential with an unknown client ID = %+v", c)
	}
}
