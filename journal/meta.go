package journal

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RecordGitHubContact records t as account's last successful GitHub contact, in one synced batch
// that also moves the host-wide contact (the newest of all accounts', which older binaries and
// LastGitHubContact read) when t is newer. A t older than the one stored is ignored, so loops
// reporting out of order never move either back.
func (j *Journal) RecordGitHubContact(ctx context.Context, account string, t time.Time) error {
	if account == "" {
		return errors.New("record GitHub contact: empty account name (a bug in the caller)")
	}
	unlock, err := j.writer(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	b := j.db.NewBatch()
	for _, key := range [][]byte{contactKey(account), keyContact} {
		last, err := j.contactAt(key)
		if err != nil {
			_ = b.Close()
			return err
		}
		if t.After(last) {
			_ = b.Set(key, []byte(t.UTC().Format(time.RFC3339Nano)), nil)
		}
	}
	if b.Empty() {
		_ = b.Close()
		return nil
	}
	if err := j.commit(b); err != nil {
		return fmt.Errorf("record GitHub contact of account %s: %w", account, err)
	}
	return nil
}

// LastGitHubContact returns the last recorded successful GitHub contact of any account, or the zero
// time if none.
func (j *Journal) LastGitHubContact(ctx context.Context) (time.Time, error) {
	unlock, err := j.reader(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer unlock()
	return j.contactAt(keyContact)
}

// Contacts is the journal's last successful GitHub contacts.
type Contacts struct {
	Newest    time.Time            // of any account (zero: none)
	ByAccount map[string]time.Time // each account's own; none for an account never recorded
}

// Of returns account's own last contact, or, for an account without one (a journal written before
// contacts were kept per account), the newest of all.
func (c Contacts) Of(account string) time.Time {
	if t, ok := c.ByAccount[account]; ok {
		return t
	}
	return c.Newest
}

// GitHubContacts returns the host-wide and every account's last successful GitHub contact.
func (j *Journal) GitHubContacts(ctx context.Context) (Contacts, error) {
	unlock, err := j.reader(ctx)
	if err != nil {
		return Contacts{}, err
	}
	defer unlock()
	newest, err := j.contactAt(keyContact)
	if err != nil {
		return Contacts{}, err
	}
	c := Contacts{Newest: newest, ByAccount: map[string]time.Time{}}
	err = j.scan(j.db, prefixContact, func(key, val []byte) error {
		t, err := j.parseContact(key, val)
		c.ByAccount[string(key[len(prefixContact):])] = t
		return err
	})
	if err != nil {
		return Contacts{}, err
	}
	return c, nil
}

func contactKey(account string) []byte { return []byte(prefixContact + account) }

func (j *Journal) contactAt(key []byte) (time.Time, error) {
	raw, ok, err := j.getRaw(key)
	if err != nil || !ok {
		return time.Time{}, err
	}
	return j.parseContact(key, raw)
}

func (j *Journal) parseContact(key, raw []byte) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, string(raw))
	if err != nil {
		return time.Time{}, fmt.Errorf("journal %s: last GitHub contact %s = %q unreadable: %w", j.dir, key, raw, err)
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
