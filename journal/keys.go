package journal

import (
	"encoding/json"
	"fmt"
)

// Key layout (docs/journal.md). Keys are readable ASCII so a dump of the store is inspectable.
var (
	keySchema  = []byte("meta/schema")         // decimal SchemaVersion
	keyHostID  = []byte("meta/host_id")        // 8 lowercase base32 chars
	keySeq     = []byte("meta/seq")            // decimal, last attempt sequence handed out
	keyContact = []byte("meta/github_contact") // RFC 3339 (nanoseconds, UTC), the newest of every account's

	prefixContact = "meta/github_contact/" // meta/github_contact/<account> -> RFC 3339 (nanoseconds, UTC)

	prefixAttempt = "attempt/" // attempt/<id> -> attemptRecord JSON
	prefixLive    = "live/"    // live/<id> -> liveEntry JSON, present iff the attempt is not terminal
	prefixUser    = "user/"    // user/<name> -> opaque bytes (PutMeta)
)

// attemptVersion is the version of the attempt JSON value; a reader refuses newer values.
const attemptVersion = 1

// attemptRecord is the stored form of an Attempt: the attempt's fields plus a value version.
type attemptRecord struct {
	V int `json:"v"`
	Attempt
}

// liveEntry is the secondary index for non-terminal attempts: just enough for Plan and Count to
// count capacity and find free slots without reading every attempt ever recorded.
type liveEntry struct {
	Target string `json:"target"`
	Slot   int    `json:"slot"`
}

func attemptKey(id string) []byte { return []byte(prefixAttempt + id) }
func liveKey(id string) []byte    { return []byte(prefixLive + id) }

// prefixBounds returns the [lower, upper) key range of every key starting with p.
func prefixBounds(p string) (lower, upper []byte) {
	lower = []byte(p)
	upper = append([]byte(p[:len(p)-1]), p[len(p)-1]+1)
	return lower, upper
}

func encodeAttempt(a Attempt) []byte {
	b, err := json.Marshal(attemptRecord{V: attemptVersion, Attempt: a})
	if err != nil {
		panic(fmt.Sprintf("journal: marshal attempt %s: %v", a.ID, err)) // only plain fields: a bug
	}
	return b
}

func decodeAttempt(key, raw []byte) (Attempt, error) {
	var r attemptRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return Attempt{}, fmt.Errorf("journal record %s is unreadable: %w", key, err)
	}
	if r.V > attemptVersion {
		return Attempt{}, fmt.Errorf("journal record %s has value version %d, newer than this binary (%d): run the newer runner-manager: %w",
			key, r.V, attemptVersion, ErrSchemaTooNew)
	}
	return r.Attempt, nil
}

func encodeLive(a Attempt) []byte {
	b, _ := json.Marshal(liveEntry{Target: a.Target, Slot: a.Slot})
	return b
}
