package ghsim

import (
	"slices"
	"strings"
)

// setLabels is what a create or PATCH makes of the labels it sends: every distinct non-empty
// label with ActionsOptions.CustomLabels, else the first one only (GitHub without custom labels
// drops the rest silently). Callers hold s.mu.
func (s *Server) setLabels(in []apiLabel) []string {
	var out []string
	for _, l := range in {
		if l.Name == "" || slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, l.Name) }) {
			continue
		}
		out = append(out, l.Name)
		if !s.opts.Actions.CustomLabels {
			break
		}
	}
	return out
}

// setServes reports whether set ss takes a job asking for labels: every one of them is the set's
// name or one of its labels (case-insensitive; self-hosted is not implied, scale sets do not carry
// it). A set without custom labels has its name only, so its jobs name it alone
// (TestScaleSetLabelRouting).
func setServes(ss *scaleSet, labels []string) bool {
	if len(labels) == 0 {
		return false
	}
	for _, l := range labels {
		if !strings.EqualFold(l, ss.name) && !slices.ContainsFunc(ss.labels, func(o string) bool { return strings.EqualFold(o, l) }) {
			return false
		}
	}
	return true
}
