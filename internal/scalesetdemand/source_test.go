package scalesetdemand

import (
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/journal"
)

// TestRetireOnceDrained: the source closes a gone target's session itself, on the journal's
// word that no runner of the target is live any more (its loop drains them through the source),
// not on a hook of the engine's; a target enabled again is left to Apply.
func TestRetireOnceDrained(t *testing.T) {
	t.Parallel()
	load := func(targets string) *config.Config {
		t.Helper()
		body := "[github]\ntoken_file = \"/dev/null\"\n" + targets
		cfg, err := config.LoadBytes("c.toml", []byte(body), config.Options{Offline: true})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	const enabled = "[[target]]\nname = \"web\"\nrepository = \"acme/web\"\nscale_set = \"web-set\"\n"
	const other = "[[target]]\nname = \"other\"\nrepository = \"acme/other\"\n"
	attempt := func(target string, st journal.State) journal.Attempt {
		return journal.Attempt{ID: "h1-1", Target: target, State: st}
	}
	for _, tc := range []struct {
		name       string
		cfg        string // the targets of the config the source has
		live       []journal.Attempt
		wantDone   bool // the watch ends
		wantClosed bool
		wantDelete bool
	}{
		{"removed and drained", other, nil, true, true, false},
		{"removed, a runner still busy", other, []journal.Attempt{attempt("web", journal.StateBusy)}, false, false, false},
		{"removed, only ended or others' runners", other, []journal.Attempt{attempt("web", journal.StateCleaned), attempt("other", journal.StateBusy)}, true, true, false},
		{"disabled", enabled + "enabled = false\n", nil, true, true, false},
		{"disabled asking to delete", enabled + "enabled = false\ndelete_scale_set_on_remove = true\n", nil, true, true, true},
		{"enabled again", enabled, nil, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			s.cfg = load(tc.cfg)
			cancelled := false
			st := &setTarget{t: config.Target{Name: "web", Repository: "acme/web", ScaleSet: "web-set"}, cancel: func() { cancelled = true }, retiring: true}
			s.sets["web"] = st
			if ct, ok := s.cfg.Target("web"); ok {
				st.heed(ct) // as Apply does
			}
			done := s.retired("web", st, tc.live)
			_, kept := s.sets["web"]
			if done != tc.wantDone {
				t.Errorf("watch done = %v, want %v", done, tc.wantDone)
			}
			if closed := cancelled && !kept && st.remove.Load(); closed != tc.wantClosed {
				t.Errorf("closed = %v (cancelled %v, kept %v, remove %v), want %v", closed, cancelled, kept, st.remove.Load(), tc.wantClosed)
			}
			if got := st.deleteOnRemove.Load(); got != tc.wantDelete {
				t.Errorf("deleteOnRemove = %v, want %v", got, tc.wantDelete)
			}
		})
	}
}
