package ghsim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/internal/ghsim/runnerproto"
	"github.com/runner-manager/runner-manager/internal/livetest"
)

// TestCommandJobs runs command jobs on the fake runner: each reports its command's output and exit
// status, readable through CommandResult and the admin API, and concludes by its exit status.
func TestCommandJobs(t *testing.T) {
	pkg := testPackage(t)
	big := runnerproto.MaxCommandOutput + 1000
	for _, tc := range []struct {
		name, command, conclusion string
		check                     func(t *testing.T, r CommandResult)
	}{
		{name: "output-and-exit-status", command: `echo out; echo err >&2; exit 3`, conclusion: "failure",
			check: func(t *testing.T, r CommandResult) {
				if r.ExitCode != 3 || r.Stdout != "out\n" || r.Stderr != "err\n" || r.Truncated || r.Error != "" {
					t.Errorf("result = %+v, want exit 3, stdout out, stderr err", r)
				}
			}},
		{name: "no-jit-config-in-the-job", command: `env; test -z "$` + runnerproto.EnvJITConfig + `"`, conclusion: "success",
			check: func(t *testing.T, r CommandResult) {
				if r.ExitCode != 0 || strings.Contains(r.Stdout, runnerproto.EnvJITConfig) || !strings.Contains(r.Stdout, "PATH=") {
					t.Errorf("the command's environment holds the JIT config, or is empty: %+v", r)
				}
			}},
		{name: "output-is-bounded", command: "head -c " + itoa(int64(big)) + " /dev/zero | tr '\\0' a; head -c " + itoa(int64(big)) + " /dev/zero >&2",
			conclusion: "success", check: func(t *testing.T, r CommandResult) {
				if len(r.Stdout) != runnerproto.MaxCommandOutput || len(r.Stderr) != runnerproto.MaxCommandOutput || !r.Truncated ||
					strings.Trim(r.Stdout, "a") != "" {
					t.Errorf("stdout %d bytes, stderr %d, truncated %v; want %d each, truncated", len(r.Stdout), len(r.Stderr), r.Truncated, runnerproto.MaxCommandOutput)
				}
			}},
		{name: "background-process-holding-the-output", command: `sleep 5 & echo started`, conclusion: "success",
			check: func(t *testing.T, r CommandResult) {
				if r.ExitCode != 0 || r.Stdout != "started\n" {
					t.Errorf("result = %+v", r)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, Options{})
			s.CreateRepo("acme", "api")
			var job struct{ ID int64 }
			admin(t, s, "POST", "/jobs", map[string]any{"repo": "acme/api", "labels": []string{"linux"}, "command": tc.command}, &job)
			if _, ok := s.CommandResult(job.ID); ok {
				t.Fatal("a queued job has a command result")
			}
			p := startRunner(t, extract(t, pkg.Path), mustJIT(t, s, "cmd-1", "linux"))
			if code := p.wait(t); code != 0 {
				t.Fatalf("runner exit %d:\n%s", code, p.out.String())
			}
			j, _ := s.Job(job.ID)
			if j.Status != StatusCompleted || j.Conclusion != tc.conclusion || j.Command != tc.command {
				t.Fatalf("job = %+v, want completed %s", j, tc.conclusion)
			}
			r, ok := s.CommandResult(job.ID)
			if !ok {
				t.Fatal("no command result after the job completed")
			}
			tc.check(t, r)
			var viaAdmin CommandResult
			if code := admin(t, s, "GET", "/jobs/"+itoa(job.ID)+"/result", nil, &viaAdmin); code != http.StatusOK || viaAdmin != r {
				t.Errorf("admin result = %d %+v, want %+v", code, viaAdmin, r)
			}
		})
	}
}

// TestCommandJobFinished: FinishJob while the command runs kills it and concludes as asked.
func TestCommandJobFinished(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	id, err := s.QueueJobSpec(JobSpec{Repo: "acme/api", Labels: []string{"linux"}, Command: "echo begun; exec sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	p := startRunner(t, extract(t, testPackage(t).Path), mustJIT(t, s, "cmd-2", "linux"))
	livetest.Eventually(t, "the command job to start", func() bool { j, _ := s.Job(id); return j.Status == StatusInProgress || p.exited() })
	if err := s.FinishJob(id, "cancelled", false); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("runner exit %d:\n%s", code, p.out.String())
	}
	r, ok := s.CommandResult(id)
	if j, _ := s.Job(id); j.Conclusion != "cancelled" || !ok || r.ExitCode != -1 || r.Stdout != "begun\n" {
		t.Fatalf("job = %+v, result = %+v (%v); want cancelled, killed, its output so far", j, r, ok)
	}
}

// TestCommandResultIsStrict: the simulator refuses a result for a job that ran no command, and one
// over the bound; the admin API says why a job has no result.
func TestCommandResultIsStrict(t *testing.T) {
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	plain, _ := s.QueueJob("acme/api", []string{"linux"}, -1)
	cfg, err := runnerproto.Decode(mustJIT(t, s, "strict-1", "linux"))
	if err != nil {
		t.Fatal(err)
	}
	hello := runnerproto.Hello{RunnerID: cfg.RunnerID, Credential: cfg.Credential}
	if code := runnerPost(t, s, "connect", hello); code != http.StatusOK {
		t.Fatalf("connect: %d", code)
	}
	if code := runnerPost(t, s, "acquire", hello); code != http.StatusOK {
		t.Fatalf("acquire: %d", code)
	}
	long := strings.Repeat("x", runnerproto.MaxCommandOutput+1)
	for _, res := range []runnerproto.CommandResult{{ExitCode: 0}, {Stdout: long}} {
		req := runnerproto.JobRequest{Hello: hello, JobID: plain, Conclusion: "success", Result: &res}
		if code := runnerPost(t, s, "complete", req); code != http.StatusBadRequest {
			t.Errorf("a result (stdout %d bytes) for a job without a command: %d, want 400", len(res.Stdout), code)
		}
	}
	if j, _ := s.Job(plain); j.Status != StatusInProgress {
		t.Fatalf("a refused completion completed the job: %+v", j)
	}
	var body map[string]string
	if code := admin(t, s, "GET", "/jobs/"+itoa(plain)+"/result", nil, &body); code != http.StatusUnprocessableEntity || body["message"] == "" {
		t.Errorf("admin result of a plain job: %d %v, want 422 with a message", code, body)
	}
}

// mustJIT registers a repository runner of acme/api through the REST API and returns its JIT config.
func mustJIT(t *testing.T, s *Server, name string, labels ...string) string {
	t.Helper()
	jit, _, err := newClient(t, s, s.AddToken(TokenOptions{})).Actions.GenerateRepoJITConfig(context.Background(), "acme", "api", jitReq(name, labels...))
	if err != nil {
		t.Fatal(err)
	}
	return jit.GetEncodedJITConfig()
}

func runnerPost(t *testing.T, s *Server, op string, body any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.URL()+"/_ghsim/runner/"+op, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPackageFileHashes: Package.FileSHA256 names every file of the tarball with its sha256.
func TestPackageFileHashes(t *testing.T) {
	pkg := testPackage(t)
	dir := extract(t, pkg.Path)
	for _, name := range []string{"run.sh", "bin/Runner.Listener"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != pkg.FileSHA256[name] {
			t.Errorf("%s: FileSHA256 %q is not the extracted file's sha256", name, pkg.FileSHA256[name])
		}
	}
	if len(pkg.FileSHA256) != 2 {
		t.Errorf("FileSHA256 = %v, want run.sh and bin/Runner.Listener", pkg.FileSHA256)
	}
}
