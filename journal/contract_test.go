package journal_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/journal"
	"github.com/runner-manager/runner-manager/journal/journaltest"
)

// The pebble journal keeps the journal contract (engine/enginetest's fake runs the same suite).
func TestContract(t *testing.T) {
	journaltest.Run(t, func(t *testing.T, now func() time.Time) journaltest.Store {
		j, err := journal.Open(t.TempDir(), journal.Options{Now: now, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = j.Close() })
		return j
	})
}
