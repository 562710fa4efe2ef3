package engine

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/runner-manager/runner-manager/journal"
)

// orphanCgroups is the startup rule for runner cgroups: one a live attempt names (by its journaled
// cgroup, or by its id, which names the cgroup it would get) is adopted with its runner and left
// alone; any other is an orphan, whatever runs in it, and is removed. Pure; pinned by
// TestOrphanCgroups.
func orphanCgroups(present []string, live []journal.Attempt) []string {
	named := map[string]bool{}
	for _, a := range live {
		named[a.ID] = true
		if a.Cgroup != "" {
			named[filepath.Base(a.Cgroup)] = true
		}
	}
	var orphans []string
	for _, c := range present {
		if !named[c] {
			orphans = append(orphans, c)
		}
	}
	slices.Sort(orphans)
	return orphans
}

// sweepCgroups removes this host's runner cgroups that no live attempt names (a journal lost or
// replaced, a cleanup an older version left half done). Run at startup before any loop starts, so
// no attempt planned after live was read can be taken for an orphan.
func (s *Supervisor) sweepCgroups(ctx context.Context, live []journal.Attempt) {
	cl, ok := s.deps.Launcher.(CgroupLauncher)
	if !ok {
		return
	}
	present, err := cl.Cgroups()
	if err != nil {
		s.events.emit(slog.LevelWarn, "", "", EventLoop, fmt.Sprintf("startup recovery could not list runner cgroups: %v; orphans are looked for again at the next start", err))
		return
	}
	ctx, cancel := s.cleanupContext(ctx)
	defer cancel()
	for _, id := range orphanCgroups(present, live) {
		if err := cl.RemoveCgroup(ctx, id); err != nil {
			s.events.emit(slog.LevelWarn, "", id, EventLoop, fmt.Sprintf("remove orphan runner cgroup of attempt %s: %v", id, err))
			continue
		}
		s.events.emit(slog.LevelInfo, "", id, EventLoop, fmt.Sprintf("removed orphan runner cgroup of attempt %s (no live attempt names it); every process in it was killed", id))
	}
}
