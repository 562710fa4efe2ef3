package webhook

import (
	"reflect"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghexamples"
)

func TestRoute(t *testing.T) {
	off := false
	targets := []config.Target{
		{Name: "api", Repository: "acme/api", Labels: []string{"linux", "x64"}},
		{Name: "api-gpu", Repository: "acme/api", Labels: []string{"linux", "gpu"}},
		{Name: "org", Organization: "acme", Labels: []string{"linux", "x64"}},
		{Name: "other-org", Organization: "globex", Labels: []string{"linux", "x64"}},
		{Name: "off", Repository: "acme/api", Labels: []string{"linux", "x64"}, Enabled: &off},
		{Name: "ent", Enterprise: "acme-corp", Labels: []string{"linux", "x64"}},
	}
	job := func(action, repo, org string, labels ...string) Event {
		return Event{Action: action, Repo: repo, Org: org, Labels: labels}
	}
	entJob := func(repo, ent string, labels ...string) Event {
		ev := job("queued", repo, "", labels...)
		ev.Org, _, _ = strings.Cut(repo, "/")
		ev.Enterprise = ent
		return ev
	}
	for _, tc := range []struct {
		name string
		ev   Event
		want []string
	}{
		{"queued, repo and org targets match", job("queued", "acme/api", "acme", "self-hosted", "linux"), []string{"api", "api-gpu", "org"}},
		{"labels pick one repo target", job("queued", "acme/api", "acme", "linux", "gpu"), []string{"api-gpu"}},
		{"names are case-insensitive", job("queued", "ACME/Api", "Acme", "Linux", "X64"), []string{"api", "org"}},
		{"completed frees a slot", job("completed", "acme/web", "acme", "linux"), []string{"org"}},
		{"the enterprise's delivery reaches its target", entJob("umbrella/web", "ACME-Corp", "linux"), []string{"ent"}},
		{"with its organisation's targets", entJob("acme/api", "acme-corp", "linux", "x64"), []string{"api", "org", "ent"}},
		{"another enterprise's does not", entJob("initech/api", "initech", "linux"), nil},
		{"user-owned repo reaches no org target", job("queued", "alice/tool", "", "linux"), nil},
		{"GitHub-hosted job wakes nobody", job("queued", "acme/api", "acme", "ubuntu-latest"), nil},
		{"job without labels wakes nobody", job("queued", "acme/api", "acme"), nil},
		{"in_progress names the runner that took it", job("in_progress", "acme/api", "acme", "linux"), []string{"api", "api-gpu", "org"}},
		{"waiting is not queued yet", job("waiting", "acme/api", "acme", "linux"), nil},
		{"queued while a deployment rule holds it", Event{Action: "queued", Status: "waiting", Repo: "acme/api", Org: "acme", Labels: []string{"linux"}}, nil},
		{"queued once approved", Event{Action: "queued", Status: "queued", Repo: "acme/api", Org: "acme", Labels: []string{"linux", "x64"}}, []string{"api", "org"}},
		{"unknown repository", job("queued", "initech/api", "initech", "linux"), nil},
	} {
		if got := Route(tc.ev, targets); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Route = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRouteWaitingJobIsNoDemand routes GitHub's own examples (internal/ghexamples, octokit's
// payloads) to a target that would take each job: a queued job is demand, and a job a deployment
// protection rule holds is none, both as action waiting and as octokit's queued.with-deployment
// (action queued, workflow_job.status waiting).
func TestRouteWaitingJobIsNoDemand(t *testing.T) {
	for name, want := range map[string]bool{
		"workflow_job.queued.json":                 true,
		"workflow_job.queued.with-deployment.json": false,
		"workflow_job.waiting.json":                false,
	} {
		ev, err := parseWorkflowJob(ghexamples.Webhooks()[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		targets := []config.Target{{Name: "t", Repository: ev.Repo, Labels: ev.Labels}}
		if got := len(Route(ev, targets)) == 1; got != want {
			t.Errorf("%s (action %s, status %s): routed %v, want %v", name, ev.Action, ev.Status, got, want)
		}
	}
}
