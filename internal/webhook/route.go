package webhook

import (
	"strings"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github"
)

// Route names the targets whose loops an event should wake: enabled targets for the event's
// repository (or its organisation) whose runners could take the job, by the same label rule the
// poll uses. A queued job (demand appeared) and a completed one (an ephemeral runner is done and its
// slot can be refilled) are worth an early pass. An in_progress one is not: each pass spends GitHub
// budget, and a runner that took a job is safe without it (a reap of it is refused as busy), so it
// is seen busy on the next poll; waking on it too cost about a fifth more budget per job (9.9 vs 8.3).
// Names compare case-insensitively, as GitHub's do. A target not routed still sees the job on its poll.
func Route(ev Event, targets []config.Target) []string {
	switch ev.Action {
	case "queued", "completed":
	default:
		return nil
	}
	var names []string
	for _, t := range targets {
		inScope := (t.Repository != "" && strings.EqualFold(t.Repository, ev.Repo)) ||
			(t.Organization != "" && strings.EqualFold(t.Organization, ev.Org))
		if inScope && t.IsEnabled() && github.LabelsMatch(ev.Labels, t.Labels) {
			names = append(names, t.Name)
		}
	}
	return names
}
