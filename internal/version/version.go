// Package version holds the build's identity: version, commit and build date, set at link time by
// the Makefile (-ldflags "-X github.com/runner-manager/runner-manager/internal/version.Version=X.Y.Z"
// and .Commit, .Date), with the Go toolchain's build info as the fallback for a `go install` or
// `go build` that set none. Current is the version selfupdate compares a candidate binary against.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Link-time values; the defaults mark a build that did not go through the Makefile.
var (
	Version = Dev
	Commit  = ""
	Date    = ""
)

// Dev is the version of a build that set none and whose build info names none either.
const Dev = "0.0.0-dev"

// Info is what `runner-manager version` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"` // built from a working tree with uncommitted changes
	Date      string `json:"date,omitempty"`     // RFC 3339: the link-time date, else the commit's
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// Get resolves the build's identity: link-time values first, then the build info (`go install
// module@v1.2.3` records v1.2.3; a build inside a git checkout records the revision and its time).
func Get() Info {
	info := Info{Version: Version, Commit: Commit, Date: Date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	return fromBuildInfo(info, bi)
}

// fromBuildInfo fills what the linker left unset from bi (separate from Get for its table test).
func fromBuildInfo(info Info, bi *debug.BuildInfo) Info {
	if info.Version == Dev && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = strings.TrimPrefix(bi.Main.Version, "v")
	}
	var revision, vcsTime string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if info.Commit == "" {
		info.Commit, info.Modified = revision, modified
	}
	if info.Date == "" {
		info.Date = vcsTime
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	return info
}

// Current is the resolved version (Get().Version): what --version prints, status and metrics show,
// and selfupdate compares.
func Current() string { return Get().Version }

// String is what `runner-manager --version` prints: "runner-manager X", one line that
// selfupdate.ParseVersion reads from a candidate binary.
func String() string { return "runner-manager " + Current() }
