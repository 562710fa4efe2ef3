package config

import "bytes"

// settler decides when a changed file is complete enough to load: only after a quiet period with
// no relevant watch event, and only when two reads one quiet period apart give the same sha256.
// A writer that truncates, writes half, pauses and writes the rest is seen as two different reads
// (or as a new event), never as a file to apply. The loop in Watcher.Run owns the timers; settler
// owns only the decision, so it is tested as a table (TestSettler).
type settler struct {
	last      []byte // sum of the content last handed over (or seen when the watch was armed)
	candidate []byte // sum read at the end of the previous quiet period; nil after an event
}

// event records a relevant change: the quiet period restarts and an earlier read no longer counts.
func (s *settler) event() { s.candidate = nil }

// check is called at the end of a quiet period with the sum of what the file reads now. It
// reports whether to hand the content over, and whether to wait one more quiet period (and read
// again) before deciding.
func (s *settler) check(sum []byte) (apply, again bool) {
	switch {
	case bytes.Equal(sum, s.last): // back to what is applied: nothing to do
		s.candidate = nil
		return false, false
	case s.candidate != nil && bytes.Equal(sum, s.candidate): // the same bytes a quiet period apart
		s.last, s.candidate = sum, nil
		return true, false
	default: // first read, or still changing: read again after one more quiet period
		s.candidate = sum
		return false, true
	}
}
