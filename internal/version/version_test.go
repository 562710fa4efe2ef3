package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name string
		link Info
		bi   debug.BuildInfo
		want Info
	}{
		{"go install module@v1.2.3", Info{Version: Dev},
			debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}},
			Info{Version: "1.2.3", GoVersion: "go1.26.8"}},
		{"go build in a checkout", Info{Version: Dev},
			debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			Info{Version: Dev, Commit: "abc123", Modified: true, Date: "2026-12-01T10:00:00Z", GoVersion: "go1.26.8"}},
		{"make build wins over the build info", Info{Version: "0.1.0", Commit: "def456", Date: "2026-11-30T09:00:00Z"},
			debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v9.9.9"}, Settings: vcs},
			Info{Version: "0.1.0", Commit: "def456", Date: "2026-11-30T09:00:00Z", GoVersion: "go1.26.8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(tc.link, &tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
