package daemon

import (
	"slices"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/metrics"
)

// targetNames are the enabled targets of cfg, whose series metrics.InitTargets creates at 0.
func targetNames(cfg *config.Config) []string {
	var out []string
	for _, t := range cfg.EnabledTargets() {
		out = append(out, t.Name)
	}
	return out
}

// accountsInUse are the accounts serving an enabled target of cfg, each once: those whose
// last-contact series the metrics export (an account no target uses makes no request).
func accountsInUse(cfg *config.Config) []string {
	var out []string
	for _, t := range cfg.EnabledTargets() {
		if name, _, _ := cfg.AccountOf(t); !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// targetGauges is the metrics' per-target source: each enabled target of the config in force,
// with its demand at its latest pass (the engine's status; a re-pointed target's draining old
// loop reports no demand of its own, so the larger figure is the current loop's).
func (d *daemon) targetGauges() []metrics.TargetGauges {
	demand := map[string]int{}
	for _, st := range d.sup.Status().Targets {
		demand[st.Name] = max(demand[st.Name], st.Demand)
	}
	cfg := d.config()
	out := make([]metrics.TargetGauges, 0, len(cfg.Targets))
	for _, t := range cfg.EnabledTargets() {
		out = append(out, metrics.TargetGauges{Name: t.Name, MaxRunners: t.MaxRunners, Demand: demand[t.Name]})
	}
	return out
}
