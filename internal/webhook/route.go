package webhook

import (
	"strings"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/github"
)

// Route names the targets a delivery concerns, in config order: enabled targets for the event's
// repository (or its organisation, or its enterprise) whose runners could take the job, by the same label rule the
// poll uses. Every state of a job a runner can take counts (engine.Supervisor.Deliver): queued is
// demand, in_progress says which runner took it (busy without a read of GitHub), completed that
// its ephemeral runner is done and its registration gone. A waiting job (a deployment protection
// rule holds it) is no demand yet, whether the action says so or only the job's status does:
// GitHub sends action queued with status waiting for a job of a protected environment (octokit's
// queued.with-deployment example, TestRouteWaitingJobIsNoDemand); it comes back as queued once
// approved. Names compare case-insensitively, as GitHub's do. A target not routed still sees the
// job on its poll.
func Route(ev Event, targets []config.Target) []string {
	switch {
	case ev.Status == "waiting":
		return nil
	case ev.Action == "queued", ev.Action == "in_progress", ev.Action == "completed":
	default:
		return nil
	}
	var names []string
	for _, t := range targets {
		inScope := (t.Repository != "" && strings.EqualFold(t.Repository, ev.Repo)) ||
			(t.Organization != "" && strings.EqualFold(t.Organization, ev.Org)) ||
			(t.Enterprise != "" && strings.EqualFold(t.Enterprise, ev.Enterprise))
		if inScope && t.IsEnabled() && github.LabelsMatch(ev.Labels, t.Labels) {
			names = append(names, t.Name)
		}
	}
	return names
}
