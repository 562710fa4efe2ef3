package ghsim

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestWindowsRunnerPackage: the fake runner built for windows/amd64 is served as actions/runner
// publishes it (actions-runner-win-x64-<version>.zip, os "win", arch "x64") beside the host's
// package, and the zip holds run.cmd (CRLF, starting bin\Runner.Listener.exe beside it) and a
// Windows executable, each named in FileSHA256. e2e/windows runs it under wine.
func TestWindowsRunnerPackage(t *testing.T) {
	ctx := context.Background()
	win, err := BuildFakeRunnerPackageFor(ctx, t.TempDir(), "windows", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if want := "actions-runner-win-x64-" + FakeRunnerVersion + ".zip"; win.Filename != want || win.OS != "win" || win.Arch != "x64" {
		t.Fatalf("package = %s (%s/%s), want %s (win/x64)", win.Filename, win.OS, win.Arch, want)
	}
	s := newTestServer(t, Options{})
	s.CreateRepo("acme", "api")
	gh := newClient(t, s, s.AddToken(TokenOptions{Login: "ops"}))
	s.ServeRunnerPackage(testPackage(t))
	s.ServeRunnerPackage(win)
	dls, _, err := gh.Actions.ListRunnerApplicationDownloads(ctx, "acme", "api")
	if err != nil || len(dls) != 2 {
		t.Fatalf("downloads = %v, %v; want the host's package and the Windows one", dls, err)
	}
	d := dls[1]
	if d.GetOS() != "win" || d.GetArchitecture() != "x64" || d.GetFilename() != win.Filename ||
		d.GetSHA256Checksum() != win.SHA256 || !strings.HasSuffix(d.GetDownloadURL(), "/"+win.Filename) {
		t.Fatalf("download entry = %+v, want %+v", d, win)
	}
	resp, err := http.Get(d.GetDownloadURL())
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != win.SHA256 {
		t.Fatal("the served zip does not match its sha256_checksum")
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("the Windows package is not a zip: %v", err)
	}
	got := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		got[f.Name], _ = io.ReadAll(rc)
		rc.Close()
		if sum := sha256.Sum256(got[f.Name]); hex.EncodeToString(sum[:]) != win.FileSHA256[f.Name] {
			t.Errorf("%s: FileSHA256 does not match the zip's file", f.Name)
		}
	}
	if len(got) != 2 || len(win.FileSHA256) != 2 {
		t.Fatalf("zip holds %d files (FileSHA256 names %d), want run.cmd and bin/Runner.Listener.exe", len(got), len(win.FileSHA256))
	}
	if cmd := string(got["run.cmd"]); !strings.Contains(cmd, `"%~dp0bin\Runner.Listener.exe" run %*`+"\r\n") {
		t.Errorf("run.cmd does not start the listener beside it with its arguments:\n%s", cmd)
	}
	if exe := got["bin/Runner.Listener.exe"]; !bytes.HasPrefix(exe, []byte("MZ")) {
		t.Errorf("bin/Runner.Listener.exe is not a Windows executable (no MZ header)")
	}
}
