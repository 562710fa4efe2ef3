//go:build e2e

package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/e2e/harness"
)

// The tests of this file write the config the ways issue 14 found unsafe, each with a runner busy
// on "edited" through every write: the busy job finishes success after the last write, the
// bystander is never disturbed, and every write is applied exactly once, counted from the daemon's
// reload events and its status generation (never from how long anything took).

// busyJob is long enough to outlast every write of one of these tests on a loaded 2-core machine
// (each write costs about two settle periods of 1 s); busyFor fails the test if it did not.
const busyJob = 30 * time.Second

// wantReloads checks the reload outcomes logged after mark, in order: one record per write, each
// containing the matching text ("applied: ...", "rejected", "unchanged"). A half-written file
// applied, or a write applied twice, shows up here as an extra record.
func wantReloads(t *testing.T, d *harness.Daemon, mark harness.LogMark, want ...string) {
	t.Helper()
	got := harness.Records(d.LogsSince(mark), func(l harness.LogLine) bool {
		return l.Kind == "reload" || l.Kind == "reload-failed"
	})
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.Contains(got[i].Msg, want[i])
	}
	if !ok {
		var msgs []string
		for _, l := range got {
			msgs = append(msgs, l.Kind+": "+l.Msg)
		}
		t.Errorf("reload records after the writes:\n  %s\nwant %d, containing %q in order", strings.Join(msgs, "\n  "), len(want), want)
	}
}

// writeTest is a reloadFixture with a runner busy on edited from before the first write.
type writeTest struct {
	*reloadFixture
	gen      int64           // the generation running before the writes
	mark     harness.LogMark // the log before the writes
	busyDone func(lastWrite time.Time)
}

func startWriteTest(t *testing.T, edited func(*harness.Config)) *writeTest {
	t.Helper()
	t.Parallel()
	f := startReloadFixture(t, edited, false)
	w := &writeTest{reloadFixture: f, gen: f.d.Status(t).Config.Generation}
	w.busyDone = f.busyFor(t, busyJob)
	w.mark = f.d.Mark()
	return w
}

// finish is the end of every test of this file: the busy job finished after the last write, the
// reload records since the first write are exactly reloads, status runs the generation after
// applied more applies with a healthy watch, the bystander was never disturbed, and the daemon
// stops clean.
func (w *writeTest) finish(t *testing.T, lastWrite time.Time, applied int64, reloads ...string) {
	t.Helper()
	w.busyDone(lastWrite)
	wantReloads(t, w.d, w.mark, reloads...)
	st := w.d.Status(t).Config
	if st.Generation != w.gen+applied || !st.LastReload.OK || st.Watch == nil || !st.Watch.Healthy {
		t.Errorf("status config %+v (watch %+v); want generation %d, last reload ok, watch healthy", st, st.Watch, w.gen+applied)
	}
	w.checkBystander(t, w.mark)
	stopClean(t, w.d, w.sim)
}

// editAddedInPlace raises target added's max_runners with an in-place write, waits for that one
// change to be applied and returns the time of the write.
func (f *writeTest) editAddedInPlace(t *testing.T) time.Time {
	t.Helper()
	at := f.d.Mark()
	f.cfg.Target(t, "added").MaxRunners = 2
	f.cfg.Write(t)
	written := time.Now()
	if applied := waitApplied(t, f.d, at); !strings.Contains(applied.Msg, "changed added (max_runners)") {
		t.Errorf("reload summary %q after an in-place edit; want added's max_runners changed", applied.Msg)
	}
	return written
}

// TestReloadHalfWrittenFileIsNeverApplied truncates the file, writes its first part (a valid
// config on its own: every target but the bystander), pauses 300 ms and writes the rest, as a
// slow writer does. The half file removing the bystander must never be applied; the whole file
// is, exactly once.
func TestReloadHalfWrittenFileIsNeverApplied(t *testing.T) {
	f := startWriteTest(t, nil)
	f.cfg.Target(t, "edited").MaxRunners = 3
	full := f.cfg.Render(t)
	cut := bytes.LastIndex(full, []byte("[[target]]")) // the bystander's table, the last one
	if cut < 0 || !bytes.Contains(full[cut:], []byte("'bystander'")) {
		t.Fatalf("the rendered config does not end with the bystander's table:\n%s", full)
	}
	if _, err := config.LoadBytes(f.cfg.Path, full[:cut], config.Options{}); err != nil {
		t.Fatalf("the first part should be a valid config on its own (the dangerous case): %v", err)
	}
	w, err := os.OpenFile(f.cfg.Path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(full[:cut]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the writer's pause: the scenario itself, not a wait
	if _, err := w.Write(full[cut:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lastWrite := time.Now()

	applied := waitApplied(t, f.d, f.mark)
	if !strings.Contains(applied.Msg, "changed edited (max_runners)") || strings.Contains(applied.Msg, "removed") {
		t.Errorf("reload summary %q: want edited's max_runners changed and nothing removed", applied.Msg)
	}
	for _, tg := range f.d.Status(t).Targets {
		if tg.Name == "edited" && tg.MaxRunners != 3 {
			t.Errorf("edited runs with max_runners %d after the reload; want 3 (the final content)", tg.MaxRunners)
		}
	}
	f.finish(t, lastWrite, 1, "applied: changed edited (max_runners)")
}

// TestReloadEmptyFileIsRejected truncates the file to nothing, then writes a file of comments
// only: each is rejected, which status and runner_manager_config_last_reload_successful show,
// and the last good config keeps running (a job is served, no target is disabled). Writing the
// good file back is a reload with nothing to do.
func TestReloadEmptyFileIsRejected(t *testing.T) {
	var metrics string
	f := startWriteTest(t, func(c *harness.Config) { metrics = harness.FreeAddr(t); c.File.Daemon.MetricsListen = metrics })
	good := f.cfg.Render(t)
	for _, c := range []struct{ name, content string }{
		{"empty", ""},
		{"comments only", "# the new config follows\n\n   \n"},
	} {
		at := f.d.Mark()
		harness.WriteConfig(t, f.cfg.Path, []byte(c.content))
		rejected := f.d.WaitRecord(t, at, reloadTimeout, c.name+": the file to be rejected", harness.OfKind("reload-failed"))
		if !strings.Contains(rejected.Msg, "holds no settings") {
			t.Errorf("%s: rejection %q; want it to say the file holds no settings", c.name, rejected.Msg)
		}
		st := f.d.Status(t)
		if st.Config.LastReload.OK || st.Config.Generation != f.gen || len(st.Config.LastReload.Error) == 0 ||
			!strings.Contains(st.Config.LastReload.Error[0], "holds no settings") {
			t.Errorf("%s: status config after the rejection %+v; want ok=false, generation %d kept, the problem named", c.name, st.Config, f.gen)
		}
		for _, tg := range st.Targets {
			if !tg.Enabled {
				t.Errorf("%s: target %s is disabled after a rejected reload", c.name, tg.Name)
			}
		}
		if v := gauge(t, metrics, "runner_manager_config_last_reload_successful"); v != 0 {
			t.Errorf("%s: runner_manager_config_last_reload_successful = %v; want 0", c.name, v)
		}
		job := f.sim.MustQueue(t, "acme/edited", labels, time.Second) // the last good config serves it
		f.sim.WaitJobsDone(t, jobsTimeout, job)
	}

	at := f.d.Mark()
	harness.WriteConfig(t, f.cfg.Path, good)
	lastWrite := time.Now()
	f.d.WaitRecord(t, at, reloadTimeout, "the good file back to be a reload with nothing to do", harness.OfKind("reload"))
	if v := gauge(t, metrics, "runner_manager_config_last_reload_successful"); v != 1 {
		t.Errorf("runner_manager_config_last_reload_successful = %v after the good file is back; want 1", v)
	}
	f.finish(t, lastWrite, 0, "holds no settings", "holds no settings", "unchanged")
}

// TestReloadDirectoryReplacedByTwoRenames replaces the config directory the way a deploy script
// does (cp -a etc etc.new; edit; mv etc etc.old; mv etc.new etc), then edits the file in place in
// the new directory: both are applied, so the watch followed the directory.
func TestReloadDirectoryReplacedByTwoRenames(t *testing.T) {
	f := startWriteTest(t, nil)
	next := f.cfg.Dir + ".new"
	if err := os.CopyFS(next, os.DirFS(f.cfg.Dir)); err != nil {
		t.Fatal(err)
	}
	f.cfg.Add(harness.RepoTarget("added", "acme/added", labels, 1))
	harness.WriteConfig(t, filepath.Join(next, filepath.Base(f.cfg.Path)), f.cfg.Render(t))
	if err := os.Rename(f.cfg.Dir, f.cfg.Dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, f.cfg.Dir); err != nil {
		t.Fatal(err)
	}
	if applied := waitApplied(t, f.d, f.mark); !strings.Contains(applied.Msg, "added added") {
		t.Errorf("reload summary %q after the directory swap; want target added added", applied.Msg)
	}
	job := f.sim.MustQueue(t, "acme/added", labels, time.Second)
	f.sim.WaitJobsDone(t, jobsTimeout, job)

	lastWrite := f.editAddedInPlace(t)
	f.finish(t, lastWrite, 2, "applied: added added", "applied: changed added (max_runners)")
}

// TestReloadDirectoryRemovedAndRecreated removes the config directory (a warning, "waiting for the
// file to come back": the last good config keeps running and status does not call it a failed
// reload within the daemon's MissingFileGrace), recreates it with an edited file, then edits that
// file in place: both are applied, so the watch re-armed from the ancestor onto the new directory.
func TestReloadDirectoryRemovedAndRecreated(t *testing.T) {
	f := startWriteTest(t, nil)
	if err := os.RemoveAll(f.cfg.Dir); err != nil {
		t.Fatal(err)
	}
	f.d.WaitRecord(t, f.mark, reloadTimeout, "the missing file to be waited for", func(l harness.LogLine) bool {
		return l.Level == "WARN" && strings.Contains(l.Msg, "waiting for the file to come back")
	})
	if st := f.d.Status(t).Config; !st.LastReload.OK {
		t.Errorf("status says the last reload failed while the file is missing for a moment: %v", st.LastReload.Error)
	}
	job := f.sim.MustQueue(t, "acme/edited", labels, time.Second) // the last good config serves it
	f.sim.WaitJobsDone(t, jobsTimeout, job)

	at := f.d.Mark()
	if err := os.MkdirAll(f.cfg.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.cfg.Add(harness.RepoTarget("added", "acme/added", labels, 1))
	f.cfg.Write(t)
	if applied := waitApplied(t, f.d, at); !strings.Contains(applied.Msg, "added added") {
		t.Errorf("reload summary %q after the directory came back; want target added added", applied.Msg)
	}

	lastWrite := f.editAddedInPlace(t)
	f.finish(t, lastWrite, 2, "applied: added added", "applied: changed added (max_runners)")
}

// TestReloadVimRenameAwayThenWrite saves the file twice the way vim does by default (backupcopy
// "auto" on a file with one link): probe the directory with a file named 4913, rename the file
// away to config.toml~, write a new config.toml, remove the backup. Each save is applied once.
func TestReloadVimRenameAwayThenWrite(t *testing.T) {
	f := startWriteTest(t, nil)
	var lastWrite time.Time
	for i, c := range []struct {
		edit func()
		want string
	}{
		{func() { f.cfg.Add(harness.RepoTarget("added", "acme/added", labels, 1)) }, "added added"},
		{func() { f.cfg.Target(t, "added").MaxRunners = 2 }, "changed added (max_runners)"},
	} {
		at := f.d.Mark()
		c.edit()
		vimSave(t, f.cfg.Path, f.cfg.Render(t))
		lastWrite = time.Now()
		if applied := waitApplied(t, f.d, at); !strings.Contains(applied.Msg, c.want) {
			t.Errorf("save %d: reload summary %q; want %q", i+1, applied.Msg, c.want)
		}
	}
	f.finish(t, lastWrite, 2, "applied: added added", "applied: changed added (max_runners)")
}

// vimSave writes data to path as vim's :w does with its default backupcopy=auto and writebackup.
func vimSave(t *testing.T, path string, data []byte) {
	t.Helper()
	probe := filepath.Join(filepath.Dir(path), "4913") // vim checks it may create files here
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}
	backup := path + "~"
	if err := os.Rename(path, backup); err != nil {
		t.Fatal(err)
	}
	harness.WriteConfig(t, path, data)
	if err := os.Remove(backup); err != nil {
		t.Fatal(err)
	}
}

// gauge scrapes the daemon's metrics listener at addr and returns the value of the unlabelled
// gauge name; it fails the test if the scrape fails or has no such gauge.
func gauge(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the scrape of %s: %v", addr, err)
	}
	fam := fams[name]
	if fam == nil || len(fam.GetMetric()) != 1 || fam.GetMetric()[0].GetGauge() == nil {
		t.Fatalf("the scrape of %s has no single gauge %s", addr, name)
	}
	return fam.GetMetric()[0].GetGauge().GetValue()
}
