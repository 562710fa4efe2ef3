package auth

import (
	"os"
	"strings"
	"testing"
)

// FuzzStoreLoad: whatever is in the credential file, Load either errors or returns a credential
// with an access token, and its error never quotes the file (which may hold tokens).
func FuzzStoreLoad(f *testing.F) {
	f.Add([]byte(`{"access_token":"ghu_x","refresh_token":"ghr_y","login":"octocat"}`))
	f.Add([]byte(`{"access_token":""}`))
	f.Add([]byte(`not json ghu_secret`))
	f.Add([]byte(`{"access_token_expires_at":"yesterday"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := NewStore(t.TempDir())
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.Path(), data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := s.Load()
		if err == nil && c.AccessToken == "" {
			t.Fatal("Load returned a credential without an access token")
		}
		if err != nil && len(data) > 8 && strings.Contains(err.Error(), string(data)) {
			t.Fatalf("error quotes the file: %v", err)
		}
	})
}
