package journal

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
)

// rawSet writes key=value straight into a closed journal's store, as another binary would.
func rawSet(t *testing.T, dir string, key, value string) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{discardLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte(key), []byte(value), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSchemaVersion(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		value   string
		wantErr error
		msg     string
	}{
		{"current", "meta/schema", "1", nil, ""},
		{"newer binary wrote it", "meta/schema", "2", ErrSchemaTooNew, "schema version 2, this runner-manager understands up to 1"},
		{"garbage", "meta/schema", "x", nil, "unreadable schema version"},
		{"bad host id", "meta/host_id", "UPPER!!!", nil, "host id missing or invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			j, err := Open(dir, Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			_ = j.Close()
			rawSet(t, dir, tt.key, tt.value)
			j, err = Open(dir, Options{Logger: discardLogger()})
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				_ = j.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Open: %v, want refusal naming %s and %q", err, dir, tt.msg)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Open: %v, want %v", err, tt.wantErr)
			}
			// Refusal released the lock and changed nothing: it is refused the same way again.
			if _, err2 := Open(dir, Options{Logger: discardLogger()}); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("second Open: %v, want the same refusal", err2)
			}
		})
	}
}

func TestForeignStoreRefused(t *testing.T) {
	dir := t.TempDir()
	rawSet(t, dir, "something", "else")
	_, err := Open(dir, Options{Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), "not a runner-manager journal") {
		t.Fatalf("Open of a foreign pebble store: %v", err)
	}
}

func TestNewerAttemptValueRefused(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir, Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	rawSet(t, dir, "attempt/x-1", `{"v":2,"id":"x-1","state":"planned"}`)
	rawSet(t, dir, "live/x-1", `{"target":"t","slot":0}`)
	j = openTest(t, dir, newFakeClock())
	if _, err := j.Get(context.Background(), "x-1"); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Get of a v2 value: %v, want ErrSchemaTooNew", err)
	}
	if _, err := j.Live(context.Background()); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Live over a v2 value: %v, want ErrSchemaTooNew", err)
	}
}
