package daemon

import (
	"errors"
	"io/fs"
	"time"
)

// MissingFileGrace is how long the config file may be missing (deleted, or its directory renamed
// away, by a tool that puts it back) before that counts as a failed reload. Until then the daemon
// logs a warning, "waiting for the file to come back", keeps the last good config, and status does
// not say the last reload failed. docs/operations.md.
const MissingFileGrace = 30 * time.Second

// absence follows how long the config file has been missing. The reload loop tells it every
// load's outcome; the clock is the caller's (TestAbsence passes times).
type absence struct {
	since time.Time // when the file was first seen missing; zero while it is there
}

// seen is told a load's outcome at now and returns how much longer to hold it back: 0 means act
// on it now (the file is there, or an error other than its absence, or missing for the whole
// MissingFileGrace), more means the file is missing and may yet come back.
func (a *absence) seen(err error, now time.Time) time.Duration {
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		a.since = time.Time{}
		return 0
	}
	if a.since.IsZero() {
		a.since = now
	}
	return max(a.since.Add(MissingFileGrace).Sub(now), 0)
}

// waiting reports whether the file is missing and its grace has not ended.
func (a *absence) waiting(now time.Time) bool {
	return !a.since.IsZero() && now.Sub(a.since) < MissingFileGrace
}

// now is the time of the missing-file grace (Options.Now).
func (d *daemon) now() time.Time {
	if d.o.Now != nil {
		return d.o.Now()
	}
	return time.Now()
}
