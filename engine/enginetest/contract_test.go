package enginetest

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/journal/journaltest"
)

// The fake journal keeps the same contract as the pebble journal (journal's TestContract).
func TestJournalContract(t *testing.T) {
	journaltest.Run(t, func(_ *testing.T, now func() time.Time) journaltest.Store {
		j := NewJournal("h")
		j.Now = now
		return j
	})
}
