package redact

import (
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/redact/redacttest"
)

// The shapes of the credentials runner-manager handles, and look-alikes that are not secrets.
func TestShapes(t *testing.T) {
	pat, fineGrain, install, refresh := redacttest.PAT, redacttest.FineGrained, redacttest.Install, redacttest.Refresh
	jwt, jit, pemKey := redacttest.JWT, redacttest.JIT, redacttest.PEMKey
	for _, tc := range []struct{ in, want string }{
		{"token " + pat + " rejected", "token " + Redacted + " rejected"},
		{"pat=" + fineGrain, "pat=" + Redacted},
		{"installation " + install, "installation " + Redacted},
		{"refresh:" + refresh, "refresh:" + Redacted},
		{"gho_" + strings.Repeat("o", 36) + " ghu_" + strings.Repeat("u", 36), Redacted + " " + Redacted},
		{"jwt " + jwt + ".", "jwt " + Redacted + "."},
		{"--jitconfig " + jit, "--jitconfig " + Redacted},
		{"key:\n" + pemKey + "\ndone", "key:\n" + Redacted + "\ndone"},
		{"truncated " + pemKey[:60], "truncated " + Redacted},
		{"Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "Authorization: Bearer " + Redacted},
		{"GET https://user:hunter2@ghe.example.com/api", "GET https://" + Redacted + "@ghe.example.com/api"},
		{"GET https://x-access-token@ghe.example.com/api", "GET https://" + Redacted + "@ghe.example.com/api"},
		{"GET https://ghe.example.com/user@example/api", "GET https://ghe.example.com/user@example/api"},
		// Things that look a little like secrets but are not.
		{"sha256 " + strings.Repeat("ab12", 16), "sha256 " + strings.Repeat("ab12", 16)},
		{"token_file=/etc/runner-manager/token ghp_short", "token_file=/etc/runner-manager/token ghp_short"},
		{"runner 2.321.0 for acme/api", "runner 2.321.0 for acme/api"},
	} {
		if got := Shapes(tc.in); got != tc.want {
			t.Errorf("Shapes(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
