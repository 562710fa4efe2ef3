// Package heartbeat owns the daemon's heartbeat record: a small file in the state directory
// (FileName, 0600) that the daemon rewrites every Interval while its supervisor makes progress,
// so a host without systemd's watchdog (and `service status`, `doctor`) can tell a live daemon
// from a wedged or dead one. It only reads and writes the record; deciding when progress was made
// is the daemon's job (internal/daemon's watchdog). It imports nothing of ours but atomicfile.
package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// FileName is the record's name inside the state directory.
const FileName = "heartbeat.json"

// Interval is how often a healthy daemon rewrites the record. A record older than StaleAfter
// means the daemon stopped making progress (or stopped).
const Interval = 30 * time.Second

// StaleAfter is the age past which a reader calls the record stale: three missed beats, so one
// slow disk write is not an alarm.
const StaleAfter = 3 * Interval

// Record is one beat.
type Record struct {
	Time       time.Time `json:"time"`       // when the supervisor was last seen making progress
	PID        int       `json:"pid"`        // the daemon's process id
	Generation int64     `json:"generation"` // the config generation it runs
	Version    string    `json:"version,omitempty"`
}

// Path is the record's path in stateDir.
func Path(stateDir string) string { return filepath.Join(stateDir, FileName) }

// Write replaces the record atomically (a reader never sees a torn one), mode 0600.
func Write(stateDir string, r Record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode the heartbeat record: %w", err)
	}
	return atomicfile.Write(Path(stateDir), append(data, '\n'), 0o600)
}

// Read returns the record in stateDir. No record (no daemon ever ran there, or it was removed)
// is an error that matches fs.ErrNotExist.
func Read(stateDir string) (Record, error) {
	var r Record
	data, err := os.ReadFile(Path(stateDir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return r, fmt.Errorf("no heartbeat record at %s (a running daemon writes one every %s): %w", Path(stateDir), Interval, fs.ErrNotExist)
		}
		return r, fmt.Errorf("read the heartbeat record: %w", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("heartbeat record %s is not valid JSON (%v); the daemon rewrites it within %s", Path(stateDir), err, Interval)
	}
	return r, nil
}

// Age is how long ago the record's beat was, at now.
func (r Record) Age(now time.Time) time.Duration { return now.Sub(r.Time) }

// Stale reports whether the record is older than StaleAfter at now.
func (r Record) Stale(now time.Time) bool { return r.Age(now) > StaleAfter }

// Alive reports whether the record's pid is a running process (signal 0). A pid reused by
// another process reads as alive; the record's age is the better sign, and readers show both.
func (r Record) Alive() bool {
	if r.PID <= 0 {
		return false
	}
	p, err := os.FindProcess(r.PID)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}
