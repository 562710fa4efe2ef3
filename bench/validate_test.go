package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
)

// BenchmarkValidate is `runner-manager validate`'s code path (config.Load: parse, positions,
// schema, rules) on generated files of 1,000 and 10,000 targets, in TOML and YAML. Positions used
// to be quadratic in TOML (62 s at 10,000 targets); the goal is under 1 s at 10,000.
func BenchmarkValidate(b *testing.B) {
	for _, format := range []string{"toml", "yaml"} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/targets=%d", format, n), func(b *testing.B) {
				path := writeSetupAs(b, b.TempDir(), Setup{Targets: n, HostMax: config.MaxRunnersLimit, TargetMax: 1,
					PollInterval: 30 * time.Second}, format)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					cfg := mustLoad(b, path)
					if len(cfg.Targets) != n {
						b.Fatalf("loaded %d targets, want %d", len(cfg.Targets), n)
					}
				}
			})
		}
	}
}

func TestSetupRendersTheSameConfigInYAML(t *testing.T) {
	s := Setup{Targets: 3, HostMax: 5, TargetMax: 2, PollInterval: 30 * time.Second, IdleTimeout: time.Minute, Edited: 2}
	dir := t.TempDir()
	fromTOML := mustLoad(t, writeSetupAs(t, dir, s, "toml"))
	fromYAML := mustLoad(t, writeSetupAs(t, dir, s, "yaml"))
	fromTOML.Source, fromYAML.Source, fromTOML.Warnings, fromYAML.Warnings = "", "", nil, nil
	if a, b := fmt.Sprintf("%+v", *fromTOML), fmt.Sprintf("%+v", *fromYAML); a != b {
		t.Fatalf("TOML and YAML renderings differ:\n%s\n%s", a, b)
	}
}
