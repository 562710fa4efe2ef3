package daemon

import (
	"slices"
	"testing"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/status"
)

// TestScaleSetTargetWithSeveralLabels: a scale-set target's labels go to GitHub with the set's
// name (the protocol's label list), so on a GitHub that keeps custom labels a job asking for
// runs-on: [gpu, linux] reaches the set and runs on this host; a reload that changes the labels
// updates the set.
func TestScaleSetTargetWithSeveralLabels(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, ghsim.Options{Actions: ghsim.ActionsOptions{CustomLabels: true}})
	cfg := func(labels string) string {
		return `
[[target]]
name = "web"
repository = "acme/web"
scale_set = "web-set"
labels = ` + labels + `
max_runners = 2
`
	}
	e.writeConfig(cfg(`["gpu", "linux"]`))
	e.start()
	e.waitStatus("the scale-set session open", func(s status.Snapshot) bool {
		ss := target(s).ScaleSet
		return ss != nil && ss.Session == "open"
	})
	if got, want := e.srv.ScaleSets()[0].Labels, []string{"web-set", "gpu", "linux"}; !slices.Equal(got, want) {
		t.Fatalf("the set's labels %v, want %v", got, want)
	}
	e.runJobWith("gpu", "linux")

	e.writeConfig(cfg(`["gpu"]`))
	e.waitStatus("the set's labels updated by the reload", func(status.Snapshot) bool {
		return slices.Equal(e.srv.ScaleSets()[0].Labels, []string{"web-set", "gpu"})
	})
}
