package ghsim

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
)

// newTestServer starts a simulator for one test and closes it at cleanup.
func newTestServer(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newClient is how callers point go-github at the simulator: BaseURL = APIURL()+"/".
func newClient(t *testing.T, s *Server, tok string) *github.Client {
	t.Helper()
	c := github.NewClient(nil)
	if tok != "" {
		c = c.WithAuthToken(tok)
	}
	u, err := url.Parse(s.APIURL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

var (
	pkgOnce sync.Once
	pkg     Package
	pkgErr  error
)

// testPackage builds the fake runner package once for the whole test binary.
func testPackage(t *testing.T) Package {
	t.Helper()
	pkgOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ghsim-pkg-test-")
		if err != nil {
			pkgErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pkg, pkgErr = BuildFakeRunnerPackage(ctx, dir)
	})
	if pkgErr != nil {
		t.Fatal(pkgErr)
	}
	return pkg
}

// extract unpacks a runner tarball into a fresh directory, as a launcher would.
func extract(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, h.Name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		out.Close()
	}
}

// proc is a started fake runner; done is closed once it exited, code is then its exit code.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	code int
	out  strings.Builder
}

// startRunner runs run.sh with the JIT config in the environment, as the shim does.
func startRunner(t *testing.T, dir, jit string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(filepath.Join(dir, "run.sh"), args...), done: make(chan struct{})}
	if jit != "" {
		p.cmd.Env = append(os.Environ(), runnerproto.EnvJITConfig+"="+jit)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(20 * time.Second):
		t.Fatalf("runner did not exit; output:\n%s", p.out.String())
		return -1
	}
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
