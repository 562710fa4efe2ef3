package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ScaleSetLabels is the label list a scale-set target's set is registered with (the protocol's
// labels): the set's name first, then the target's labels other than the name, each once
// (case-insensitive), in order. GitHub keeps the labels beyond the first where custom scale-set
// labels are enabled (GHES 3.18+ with DistributedTask.AllowRunnerScaleSetCustomLabels) and drops
// them silently elsewhere; a job reaches the set when every label it asks for is among them.
func (t Target) ScaleSetLabels() []string {
	if t.ScaleSet == "" {
		return nil
	}
	out := []string{t.ScaleSet}
	for _, l := range t.Labels {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, l) }) {
			out = append(out, l)
		}
	}
	return out
}

// scaleSetLabels: a scale set's labels are its name and the target's labels; self-hosted is not
// one (a scale set never carries it, so a job asking for it never reaches the set).
func (c *checker) scaleSetLabels(t Target, p string) {
	for i, l := range t.Labels {
		if strings.EqualFold(l, "self-hosted") {
			c.add(SeverityError, p+".labels."+strconv.Itoa(i), fmt.Sprintf("a scale set does not carry the label self-hosted, so a job asking for it never reaches the set: remove it; jobs reach the set with runs-on: %s (or with its other labels where GitHub keeps them)", t.ScaleSet))
		}
	}
}
