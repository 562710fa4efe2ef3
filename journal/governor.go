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
	return j.putRecord(ctx, keyGovernor, governorRecord{V: governorVersion, GovernorGrants: g}, "the request governor's grants")
}

// Governor returns the last grants RecordGovernor stored (zero when none, or written by a newer
// binary: the governor then starts as a fresh one would).
func (j *Journal) Governor(ctx context.Context) (GovernorGrants, error) {
	var r governorRecord
	if err := j.getRecord(ctx, keyGovernor, &r, "the request governor's record"); err != nil || r.V > governorVersion {
		return GovernorGrants{}, err
	}
	return r.GovernorGrants, nil
}

// keyPollPlan holds what the last poll plan was built from (PollPlanBasis).
var keyPollPlan = []byte("meta/poll_plan")

// PollPlanBasis is what the poll plan's stretch was computed from beyond the config: each
// organization's repository count at its last listing. A restarted daemon plans its first polls
// on it, so its stretch is the last run's from the start instead of costing each organization as
// one repository until it is listed again (docs/github.md).
type PollPlanBasis struct {
	Stretch    float64        `json:"stretch"` // the plan's stretch then, for an operator reading a dump
	RepoCounts map[string]int `json:"repo_counts"`
}

type pollPlanRecord struct {
	V int `json:"v"`
	PollPlanBasis
}

// RecordPollPlan replaces the poll plan's basis with b, in one synced batch.
func (j *Journal) RecordPollPlan(ctx context.Context, b PollPlanBasis) error {
	return j.putRecord(ctx, keyPollPlan, pollPlanRecord{V: governorVersion, PollPlanBasis: b}, "the poll plan's basis")
}

// PollPlan returns the basis RecordPollPlan stored (zero when none).
func (j *Journal) PollPlan(ctx context.Context) (PollPlanBasis, error) {
	var r pollPlanRecord
	if err := j.getRecord(ctx, keyPollPlan, &r, "the poll plan's record"); err != nil || r.V > governorVersion {
		return PollPlanBasis{}, err
	}
	return r.PollPlanBasis, nil
}

// putRecord stores v's JSON at key in one synced batch; what names it in errors.
func (j *Journal) putRecord(ctx context.Context, key []byte, v any, what string) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("record %s: %w", what, err)
	}
	unlock, err := j.writer(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	b := j.db.NewBatch()
	_ = b.Set(key, raw, nil)
	if err := j.commit(b); err != nil {
		return fmt.Errorf("record %s: %w", what, err)
	}
	return nil
}

// getRecord decodes the JSON at key into v, leaving v as it is when there is none.
func (j *Journal) getRecord(ctx context.Context, key []byte, v any, what string) error {
	unlock, err := j.reader(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	raw, ok, err := j.getRaw(key)
	if err != nil || !ok {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("journal %s: %s is unreadable: %w (it is rewritten when it next changes)", j.dir, what, err)
	}
	return nil
}
