package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// killUntilGone, the loop killUID shares on Linux and macOS: kill, then look, until a look finds
// nothing; a kill that cannot run is retried, a look that fails ends it, and it gives up after
// its rounds naming the uid.
func TestKillUntilGone(t *testing.T) {
	errStart := errors.New("fork: resource temporarily unavailable")
	for _, tc := range []struct {
		name      string
		uid       uint32
		left      []int // processes each look finds, round by round (then none)
		killFails int   // the first kills that cannot run
		scanFails bool
		wantKills int
		wantScans int
		wantErr   string
	}{
		{name: "nothing running", uid: 7, wantKills: 1, wantScans: 1},
		{name: "a fork chain outlives two kills", uid: 7, left: []int{3, 1}, wantKills: 3, wantScans: 3},
		{name: "the helper cannot start twice", uid: 7, killFails: 2, wantKills: 3, wantScans: 1},
		{name: "a scan fails", uid: 7, scanFails: true, wantKills: 1, wantScans: 1, wantErr: "proc gone"},
		{name: "never empty", uid: 7, left: []int{1, 1, 1, 1, 1}, wantKills: 4, wantScans: 4, wantErr: "processes of uid 7 keep appearing after 4 rounds"},
		{name: "never starts", uid: 7, killFails: 9, wantKills: 4, wantScans: 0, wantErr: "fork: resource"},
		{name: "root", uid: 0, wantErr: "refusing to kill every process of uid 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kills, scans := 0, 0
			err := killUntilGone(context.Background(), tc.uid, 4, func(context.Context) error {
				kills++
				if kills <= tc.killFails {
					return errStart
				}
				return nil
			}, func() ([]int, error) {
				scans++
				if tc.scanFails {
					return nil, errors.New("proc gone")
				}
				if scans <= len(tc.left) {
					return make([]int, tc.left[scans-1]), nil
				}
				return nil, nil
			})
			if kills != tc.wantKills || scans != tc.wantScans {
				t.Errorf("%d kills and %d scans, want %d and %d", kills, scans, tc.wantKills, tc.wantScans)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
