package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// binary is runner-manager built once for the whole package: the shim every runner runs under
// (`runner-manager shim`) and the CLI whose `status` output the golden tests read.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rmdaemon-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "runner-manager")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", binary, "github.com/runner-manager/runner-manager/cmd/runner-manager").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build runner-manager for the shim: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	// The daemon owns and joins every goroutine it starts; none may outlive its Run.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}
