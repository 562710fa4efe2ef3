package webhook

import (
	"strings"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github"
)

// Route names the targets whose loops an event should wake: enabled targets for the event's
// repository (or its organisation) whose runners could take the job, by the same label rule the
// poll uses. A queued job (demand appeared), an in-progress one (a runner went busy: it must not be
// reaped, and its pick-up is measured when seen) and a completed one (an ephemeral runner is done and
// its slot can be refilled) are worth an early pass; "waiting" changes nothing a pass acts on.
// Names compare case-insensitively, as GitHub's do. A target not routed still sees the job on its poll.
func Route(ev Event, targets []config.Target) []string {
	switch ev.Action {
	case "queued", "in_progress", "completed":
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
