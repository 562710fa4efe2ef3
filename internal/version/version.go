// Package version holds the build's version string. It is set at link time by the Makefile
// (-ldflags "-X github.com/runner-manager/runner-manager/internal/version.Version=X.Y.Z") and is the
// version selfupdate compares a candidate binary against.
package version

// Version is overwritten by -ldflags; the default marks a build that did not go through the Makefile.
var Version = "0.0.0-dev"

// String is what `runner-manager --version` prints.
func String() string { return "runner-manager " + Version }
