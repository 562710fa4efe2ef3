package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/runner-manager/runner-manager/internal/ghsim"
	"github.com/runner-manager/runner-manager/internal/ghsim/ghsimtest"
	"github.com/runner-manager/runner-manager/internal/runner"
)

// The test binary doubles as the shim, as the daemon's binary does: the launcher re-executes it
// with "shim" as its first argument.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "shim" {
		os.Exit(runner.RunShim(context.Background(), os.Args[2:], os.Environ()))
	}
	os.Exit(m.Run())
}

// BenchmarkLaunchFromCache is a runner launch once the package is cached and the JIT config is
// issued: Launcher.Prepare (materialise the cached package into a fresh runtime directory) then
// Launcher.Start (shim started in its own session, JIT config handed over a pipe, run.sh running,
// start confirmed). The runner is the simulator's fake runner, which connects to ghsim. Each
// iteration's runner is stopped and its directory removed outside the timer.
func BenchmarkLaunchFromCache(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	sim := ghsimtest.Start(b, ghsim.Options{})
	sim.CreateOrg(Org)
	sim.CreateRepo(Org, "r0001")
	tok := sim.AddToken(ghsim.TokenOptions{Login: "bench"})
	pkg, err := ghsim.BuildFakeRunnerPackage(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	sim.ServeRunnerPackage(pkg)
	quiet := slog.New(slog.DiscardHandler)
	cache, err := runner.NewCache(filepath.Join(dir, "cache"), runner.CacheOptions{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	p := runner.Package{Version: pkg.Version, OS: pkg.OS, Arch: pkg.Arch, SHA256: pkg.SHA256,
		URL: sim.URL() + "/_ghsim/downloads/" + pkg.Filename}
	if _, err := cache.Ensure(ctx, p); err != nil { // the download is not what this measures
		b.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	root := filepath.Join(dir, "runs")
	l, err := runner.NewLauncher(runner.LauncherOptions{RuntimeRoot: root, ShimExecutable: exe, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	client := gh.NewClient(nil).WithAuthToken(tok)
	client.BaseURL, _ = url.Parse(sim.URL() + "/")

	var prep, start, total []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		id := fmt.Sprintf("bench-%d", i)
		jit, _, err := client.Actions.GenerateRepoJITConfig(ctx, Org, "r0001", &gh.GenerateJITConfigRequest{
			Name: "runner-manager-" + id, RunnerGroupID: 1, Labels: []string{"self-hosted", "bench"}})
		if err != nil {
			b.Fatal(err)
		}
		rt := filepath.Join(root, id)
		b.StartTimer()
		t0 := time.Now()
		if err := l.Prepare(ctx, cache, p, rt); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		h, err := l.Start(ctx, runner.Spec{AttemptID: id, RuntimeDir: rt, JITConfig: jit.GetEncodedJITConfig()})
		t2 := time.Now()
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		prep, start, total = append(prep, t1.Sub(t0)), append(start, t2.Sub(t1)), append(total, t2.Sub(t0))
		stopRunner(b, l, h, rt)
		b.StartTimer()
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"prepare", prep}, {"start", start}, {"launch", total}} {
		b.ReportMetric(ms(Percentile(m.d, 50)), m.name+"-p50-ms")
		b.ReportMetric(ms(Percentile(m.d, 95)), m.name+"-p95-ms")
	}
}

// stopRunner asks the idle runner to stop, waits (bounded) for the shim's exit status, then
// removes the runtime directory, so no process outlives its iteration.
func stopRunner(b *testing.B, l *runner.Launcher, h runner.Handle, dir string) {
	b.Helper()
	if err := l.Stop(context.Background(), h); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, exited, err := runner.ExitStatus(dir)
		if alive, aerr := runner.Alive(h.PID, h.StartTime); err == nil && aerr == nil && exited && !alive {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("runner in %s did not exit within 20s of its stop (%v)", dir, err)
		}
		time.Sleep(5 * time.Millisecond) // a real process exit is awaited
	}
	if err := l.RemoveRuntimeDir(context.Background(), dir); err != nil {
		b.Fatal(err)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
