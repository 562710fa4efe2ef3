package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/runner-manager/runner-manager/config"
)

// TestApplyConfigUndoesTheStepsBefore: a step that refuses the config has the steps before it
// undone, last first, with the config in force before; the steps after it never run, and its
// error is the sequence's.
func TestApplyConfigUndoesTheStepsBefore(t *testing.T) {
	refused := errors.New("refused")
	tests := []struct {
		name    string
		failAt  int // index of the failing step; -1: none fails
		undoers []bool
		want    []string
	}{
		{"all apply", -1, []bool{true, true, true}, []string{"apply 0", "apply 1", "apply 2"}},
		{"first fails", 0, []bool{true, true, true}, []string{"apply 0"}},
		{"middle fails", 1, []bool{true, true, true}, []string{"apply 0", "apply 1", "undo 0"}},
		{"last fails", 2, []bool{true, true, true}, []string{"apply 0", "apply 1", "apply 2", "undo 1", "undo 0"}},
		{"steps without undo are skipped", 2, []bool{true, false, true}, []string{"apply 0", "apply 1", "apply 2", "undo 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, cur := &config.Config{}, &config.Config{}
			var got []string
			var steps []applier
			for i, undoable := range tt.undoers {
				s := applier{name: fmt.Sprint(i), apply: func(_ context.Context, c *config.Config) error {
					if c != cur {
						t.Errorf("step %d applied another config", i)
					}
					got = append(got, fmt.Sprint("apply ", i))
					if i == tt.failAt {
						return refused
					}
					return nil
				}}
				if undoable {
					s.undo = func(c *config.Config) {
						if c != old {
							t.Errorf("step %d undone to another config than the old one", i)
						}
						got = append(got, fmt.Sprint("undo ", i))
					}
				}
				steps = append(steps, s)
			}
			err := applyConfig(context.Background(), steps, old, cur)
			if (tt.failAt >= 0) != errors.Is(err, refused) {
				t.Errorf("applyConfig error = %v, want refused: %v", err, tt.failAt >= 0)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("calls = %q, want %q", got, tt.want)
			}
		})
	}
}
