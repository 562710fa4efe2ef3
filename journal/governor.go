package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// keyGovernor holds the request governor's grants of the last minute (GovernorGrants).
var keyGovernor = []byte("meta/governor")

// governorVersion is the version of the governor record's JSON; a reader ignores newer ones.
const governorVersion = 1

// SecondPoints is the secondary-limit points an account was granted in one second (Unix).
type SecondPoints struct {
	Unix   int64 `json:"unix"`
	Points int   `json:"points"`
}

// GovernorGrants is what the request governor granted each GitHub account over the last minute,
// journaled before it was spent so that a restarted daemon starts owing it (internal/github's
// Ledger; docs/github.md).
type GovernorGrants struct {
	At       time.Time                 `json:"at"` // when it was recorded
	Accounts map[string][]SecondPoints `json:"accounts"`
}

type governorRecord struct {
	V int `json:"v"`
	GovernorGrants
}

// RecordGovernor replaces the governor's grants with g, in one synced batch.
func (j *Journal) RecordGovernor(ctx context.Context, g GovernorGrants) error {
	raw, err := json.Marshal(governorRecord{V: governorVersion, GovernorGrants: g})
	if err != nil {
		return fmt.Errorf("record the request governor's grants: %w", err)
	}
	unlock, err := j.writer(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	b := j.db.NewBatch()
	_ = b.Set(keyGovernor, raw, nil)
	if err := j.commit(b); err != nil {
		return fmt.Errorf("record the request governor's grants: %w", err)
	}
	return nil
}

// Governor returns the last grants RecordGovernor stored (zero when none, or written by a newer
// binary: the governor then starts as a fresh one would).
func (j *Journal) Governor(ctx context.Context) (GovernorGrants, error) {
	unlock, err := j.reader(ctx)
	if err != nil {
		return GovernorGrants{}, err
	}
	defer unlock()
	raw, ok, err := j.getRaw(keyGovernor)
	if err != nil || !ok {
		return GovernorGrants{}, err
	}
	var r governorRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return GovernorGrants{}, fmt.Errorf("journal %s: the request governor's record is unreadable: %w (it is rewritten at the next request)", j.dir, err)
	}
	if r.V > governorVersion {
		return GovernorGrants{}, nil
	}
	return r.GovernorGrants, nil
}
