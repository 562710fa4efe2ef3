package doctor

import (
	"os"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/heartbeat"
)

// TestCheckHeartbeat tells a live daemon from a wedged one (stale record, pid alive) and a
// stopped one (stale, pid gone).
func TestCheckHeartbeat(t *testing.T) {
	tests := []struct {
		name   string
		record *heartbeat.Record
		damage bool
		status Status
	}{
		{name: "never ran", status: Skip},
		{name: "fresh", record: &heartbeat.Record{Time: testNow.Add(-20 * time.Second), PID: os.Getpid(), Generation: 3}, status: OK},
		{name: "wedged", record: &heartbeat.Record{Time: testNow.Add(-5 * time.Minute), PID: os.Getpid()}, status: Fail},
		{name: "stopped", record: &heartbeat.Record{Time: testNow.Add(-5 * time.Minute), PID: 0}, status: Warn},
		{name: "damaged", damage: true, status: Warn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			e := &Env{Now: func() time.Time { return testNow }, Config: &config.Config{Daemon: config.Daemon{StateDir: state}}}
			if tt.record != nil {
				if err := heartbeat.Write(state, *tt.record); err != nil {
					t.Fatal(err)
				}
			}
			if tt.damage {
				if err := os.WriteFile(heartbeat.Path(state), []byte("{"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			f := checkHeartbeat(t.Context(), e)[0]
			if f.Status != tt.status || (f.Status == Fail || f.Status == Warn && tt.record != nil) && f.Do == "" {
				t.Errorf("got %+v, want %s", f, tt.status)
			}
		})
	}
	e := &Env{Root: t.TempDir(), Now: func() time.Time { return testNow }}
	if f := checkHeartbeat(t.Context(), e)[0]; f.Status != Skip {
		t.Errorf("under --root: %+v, want skip", f)
	}
}
