package ghsim

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScaleSetLabelRouting: without ActionsOptions.CustomLabels a set keeps its first label only
// (GitHub without custom labels) and takes the jobs that name it alone; with it, the set keeps
// every label it was given and takes each job whose labels are all among them, by any of them.
func TestScaleSetLabelRouting(t *testing.T) {
	labels := []map[string]string{{"type": "System", "name": "gpu-set"}, {"type": "System", "name": "gpu"}, {"type": "System", "name": "Linux"}}
	for _, tc := range []struct {
		name   string
		custom bool
		want   []string
		routed map[string]bool // a job's labels, comma-joined -> reaches the set
	}{
		{"extras dropped", false, []string{"gpu-set"}, map[string]bool{"gpu-set": true, "gpu": false, "gpu,linux": false, "GPU-SET,gpu": false}},
		{"custom labels kept", true, []string{"gpu-set", "gpu", "Linux"}, map[string]bool{"gpu-set": true, "gpu": true, "gpu,linux": true,
			"GPU-SET,gpu": true, "gpu,windows": false, "self-hosted,gpu": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newScaleSetServer(t, ActionsOptions{CustomLabels: tc.custom})
			c := connect(t, s, "acme")
			r := c.call("POST", "_apis/runtime/runnerscalesets", map[string]any{"name": "gpu-set", "runnerGroupId": 1, "labels": labels})
			if r.code != http.StatusOK {
				t.Fatalf("create: %d %s", r.code, r.body)
			}
			c.setID = int64(r.json(t)["id"].(float64))
			if got := s.ScaleSets()[0].Labels; !slices.Equal(got, tc.want) {
				t.Fatalf("set labels %v, want %v", got, tc.want)
			}
			for job, want := range tc.routed {
				before := s.ScaleSets()[0].Statistics.TotalAvailableJobs
				if _, err := s.QueueJob("acme/api", strings.Split(job, ","), time.Minute); err != nil {
					t.Fatal(err)
				}
				if got := s.ScaleSets()[0].Statistics.TotalAvailableJobs > before; got != want {
					t.Errorf("job runs-on [%s] reached the set: %v, want %v", job, got, want)
				}
			}
			// A PATCH with labels replaces them by the same rule.
			r = c.call("PATCH", c.setPath(""), map[string]any{"labels": labels[:2]})
			if got := s.ScaleSets()[0].Labels; r.code != http.StatusOK || !slices.Equal(got, tc.want[:min(2, len(tc.want))]) {
				t.Errorf("after PATCH: %d, labels %v", r.code, got)
			}
		})
	}
}
