package daemonproc

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// VersionVar is the linker symbol the release version is set through (-X), as `make build` does.
const VersionVar = "github.com/runner-manager/runner-manager/internal/version.Version"

// Build compiles cmd/runner-manager of the module at root into out, with version linked in, the
// way `make build` does: CGO_ENABLED=0, so the binary is static (the Makefile's build target uses
// the same flags, and checks the result the same way). It refuses a result that is not static.
func Build(ctx context.Context, root, out, version string) error {
	return build(ctx, root, "./cmd/runner-manager", out, "-X "+VersionVar+"="+version)
}

// BuildSim compiles the simulator (cmd/ghsim) of the module at root into out, as `make build` does.
func BuildSim(ctx context.Context, root, out string) error {
	return build(ctx, root, "./cmd/ghsim", out, "")
}

func build(ctx context.Context, root, pkg, out, ldflags string) error {
	cmd := exec.CommandContext(ctx, goTool(), "build", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return CheckStatic(out)
}

// CheckStatic reports an error unless the Go binary at path was built with CGO_ENABLED=0 (what
// `go version -m` prints as its build settings).
func CheckStatic(path string) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the build info of %s: %w", path, err)
	}
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" {
			if s.Value == "0" {
				return nil
			}
			return fmt.Errorf("%s was built with CGO_ENABLED=%s: it must be static (CGO_ENABLED=0)", path, s.Value)
		}
	}
	return fmt.Errorf("%s records no CGO_ENABLED build setting", path)
}

// goTool is the go command of the toolchain running this program when there is one (tests), else
// the one on PATH.
func goTool() string {
	g := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(g); err == nil {
		return g
	}
	return "go"
}

// ModuleRoot walks up from dir to the directory holding go.mod.
func ModuleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or any parent: run from a checkout of the repository", dir)
		}
	}
}
