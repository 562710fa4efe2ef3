package journal

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RecordGitHubContact records t as the last successful GitHub contact, in one synced batch. An
// older t than the one stored is ignored, so loops reporting out of order never move it back.
func (j *Journal) RecordGitHubContact(ctx context.Context, t time.Time) error {
	unlock, err := j.writer(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	last, err := j.lastContact()
	if err != nil {
		return err
	}
	if !t.After(last) {
		return nil
	}
	b := j.db.NewBatch()
	_ = b.Set(keyContact, []byte(t.UTC().Format(time.RFC3339Nano)), nil)
	if err := j.commit(b); err != nil {
		return fmt.Errorf("record GitHub contact: %w", err)
	}
	return nil
}

// LastGitHubContact returns the last recorded successful GitHub contact, or the zero time if none.
func (j *Journal) LastGitHubContact(ctx context.Context) (time.Time, error) {
	unlock, err := j.reader(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer unlock()
	return j.lastContact()
}

func (j *Journal) lastContact() (time.Time, error) {
	raw, ok, err := j.getRaw(keyContact)
	if err != nil || !ok {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, string(raw))
	if err != nil {
		return time.Time{}, fmt.Errorf("journal %s: last GitHub contact %q unreadable: %w", j.dir, raw, err)
	}
	return t, nil
}

// PutMeta stores a small named value for another subsystem (for example selfupdate's crash-loop
// counter) in one synced batch. Names are the caller's; keep them short and stable.
func (j *Journal) PutMeta(ctx context.Context, name string, value []byte) error {
	if name == "" {
		return errors.New("journal meta: empty name (a bug in the caller)")
	}
	unlock, err := j.writer(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	b := j.db.NewBatch()
	_ = b.Set([]byte(prefixUser+name), value, nil)
	if err := j.commit(b); err != nil {
		return fmt.Errorf("store journal meta %q: %w", name, err)
	}
	return nil
}

// GetMeta returns the value PutMeta stored under name, and whether there was one.
func (j *Journal) GetMeta(ctx context.Context, name string) ([]byte, bool, error) {
	unlock, err := j.reader(ctx)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	return j.getRaw([]byte(prefixUser + name))
}

// Checkpoint writes a consistent copy of the journal into dest (which must not exist) while the
// journal stays open, for inspection or a bug report: the copy opens with Open like any journal.
func (j *Journal) Checkpoint(ctx context.Context, dest string) error {
	unlock, err := j.reader(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := j.db.Checkpoint(dest); err != nil {
		return fmt.Errorf("checkpoint journal %s into %s: %w", j.dir, dest, err)
	}
	return nil
}
