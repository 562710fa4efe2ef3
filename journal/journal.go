// Package journal is runner-manager's crash-safety record: a pebble-backed, typed store of runner
// attempts and their lifecycle state machine, host-wide slot leases, the host identity, the last
// successful GitHub contact, and a few small named values for other subsystems.
//
// Every write is one synced pebble batch, made before the side effect it names, so after kill -9
// the journal says which side effects may have happened. The journal never performs a side effect
// itself (no GitHub call, no process, no directory besides its own), and no pebble type leaves it.
// The key layout and schema policy are in docs/journal.md.
package journal

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// SchemaVersion is the on-disk layout this binary writes and understands (docs/journal.md).
const SchemaVersion = 1

var (
	// ErrSchemaTooNew: the journal was written by a newer runner-manager; nothing was changed.
	ErrSchemaTooNew = errors.New("journal schema is newer than this binary understands")
	// ErrClosed: the journal was used after Close.
	ErrClosed = errors.New("journal is closed")
)

// Options configures Open. The zero value is usable.
type Options struct {
	// Now is the clock used for attempt timestamps; time.Now when nil.
	Now func() time.Time
	// Logger receives pebble's own messages (Info at debug level); slog.Default when nil.
	Logger *slog.Logger
	// OnWrite, when set, is called with the duration of every synced batch commit (for a latency
	// metric). It is called with the journal's write lock held, so it must be fast.
	OnWrite func(d time.Duration)
}

// Journal is an open journal. It is safe for concurrent use; writes are serialised by one mutex,
// which is what makes Plan the race-free capacity allocation point.
type Journal struct {
	dir    string
	now    func() time.Time
	log    *slog.Logger
	write  func(d time.Duration)
	hostID string

	mu     sync.RWMutex // Lock for writes and Close, RLock for reads
	db     *pebble.DB
	lock   *pebble.Lock
	closed bool
}

// Open opens (creating if needed, mode 0700) the journal in dir and takes its exclusive lock.
// A journal held by another process fails with ErrLocked; one written by a newer binary fails
// with ErrSchemaTooNew.
func Open(dir string, opts Options) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create journal directory %s: %w", dir, err)
	}
	j := &Journal{dir: dir, now: opts.Now, log: opts.Logger, write: opts.OnWrite}
	if j.now == nil {
		j.now = time.Now
	}
	if j.log == nil {
		j.log = slog.Default()
	}
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		return nil, lockError(dir, err)
	}
	db, err := pebble.Open(dir, &pebble.Options{Lock: lock, Logger: pebbleLogger{j.log}})
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("open journal %s: %w (if the files are damaged, move the directory aside; recovery then cannot adopt runners it recorded)", dir, err)
	}
	j.db, j.lock = db, lock
	if err := j.initSchema(); err != nil {
		_ = j.Close()
		return nil, err
	}
	j.log.Info("journal opened", "dir", dir, "host_id", j.hostID, "schema", SchemaVersion)
	return j, nil
}

// lockError turns pebble's lock refusal into an operator message naming the holder if it can.
func lockError(dir string, err error) error {
	if strings.Contains(err.Error(), "held by current process") {
		return fmt.Errorf("journal %s is already open in this process: %w", dir, ErrLocked)
	}
	if !lockConflict(err) {
		return fmt.Errorf("lock journal %s: %w", dir, err)
	}
	holder := "another process"
	if pid := lockHolder(dir); pid > 0 {
		holder = fmt.Sprintf("another process (pid %d)", pid)
	}
	return fmt.Errorf("journal %s is locked by %s: stop that runner-manager first or use a different state_dir: %w", dir, holder, ErrLocked)
}

func (j *Journal) initSchema() error {
	raw, ok, err := j.getRaw(keySchema)
	if err != nil {
		return err
	}
	if !ok {
		return j.initialise()
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil || v < 1 {
		return fmt.Errorf("journal %s: unreadable schema version %q: move the directory aside to start a fresh journal", j.dir, raw)
	}
	if v > SchemaVersion {
		return fmt.Errorf("journal %s has schema version %d, this runner-manager understands up to %d: run the newer binary or point state_dir elsewhere: %w",
			j.dir, v, SchemaVersion, ErrSchemaTooNew)
	}
	id, ok, err := j.getRaw(keyHostID)
	if err != nil {
		return err
	}
	if !ok || !validHostID(string(id)) {
		return fmt.Errorf("journal %s: host id missing or invalid (%q): move the directory aside to start a fresh journal", j.dir, id)
	}
	j.hostID = string(id)
	return nil
}

// initialise writes the schema, a new host id and the sequence in one batch, so a journal either
// has all three or none (a crash during init leaves an empty store that is initialised again).
func (j *Journal) initialise() error {
	it, err := j.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.dir, err)
	}
	nonEmpty := it.First()
	if err := it.Close(); err != nil {
		return fmt.Errorf("journal %s: %w", j.dir, err)
	}
	if nonEmpty {
		return fmt.Errorf("journal %s holds data but no schema key: it is not a runner-manager journal; point state_dir elsewhere", j.dir)
	}
	id, err := newHostID()
	if err != nil {
		return err
	}
	b := j.db.NewBatch()
	_ = b.Set(keySchema, []byte(strconv.Itoa(SchemaVersion)), nil)
	_ = b.Set(keyHostID, []byte(id), nil)
	_ = b.Set(keySeq, []byte("0"), nil)
	if err := j.commit(b); err != nil {
		return err
	}
	j.hostID = id
	return nil
}

// newHostID returns 8 lowercase base32 characters (40 random bits): short, and safe in runner
// names, directory names and metric labels.
func newHostID() (string, error) {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate host id: %w", err)
	}
	return strings.ToLower(base32.StdEncoding.EncodeToString(b[:])), nil
}

func validHostID(s string) bool {
	if len(s) != 8 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// HostID is this host's persistent identity, generated once when the journal was created.
func (j *Journal) HostID() string { return j.hostID }

// Dir is the journal's directory.
func (j *Journal) Dir() string { return j.dir }

// Close flushes and releases the journal and its lock. Further calls return ErrClosed.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	err := j.db.Close()
	if lerr := j.lock.Close(); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("close journal %s: %w", j.dir, err)
	}
	return nil
}

// commit writes b as one synced batch and reports its latency to OnWrite.
func (j *Journal) commit(b *pebble.Batch) error {
	start := time.Now()
	err := b.Commit(pebble.Sync)
	_ = b.Close()
	if j.write != nil {
		j.write(time.Since(start))
	}
	if err != nil {
		return fmt.Errorf("write journal %s: %w (check the disk is writable and not full)", j.dir, err)
	}
	return nil
}

// getRaw returns a copy of the value at key.
func (j *Journal) getRaw(key []byte) ([]byte, bool, error) {
	v, closer, err := j.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read journal %s key %q: %w", j.dir, key, err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), true, nil
}

// reader takes the read lock for one operation, failing if the journal is closed.
func (j *Journal) reader(ctx context.Context) (unlock func(), err error) {
	return j.acquire(ctx, j.mu.RLock, j.mu.RUnlock)
}

// writer takes the write lock for one read-modify-write, failing if the journal is closed.
func (j *Journal) writer(ctx context.Context) (unlock func(), err error) {
	return j.acquire(ctx, j.mu.Lock, j.mu.Unlock)
}

func (j *Journal) acquire(ctx context.Context, lock, unlock func()) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lock()
	if j.closed {
		unlock()
		return nil, ErrClosed
	}
	return unlock, nil
}

// pebbleLogger routes pebble's messages into slog; pebble's Fatalf means on-disk corruption or a
// broken invariant, after which continuing could lose records, so it panics after logging.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("pebble: "+fmt.Sprintf(format, args...), "component", "journal")
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error("pebble fatal: "+msg, "component", "journal")
	panic("journal: pebble fatal: " + msg)
}
