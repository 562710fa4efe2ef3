package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// System is the service manager a host uses.
type System string

const (
	Systemd System = "systemd"
	Launchd System = "launchd"
	Windows System = "windows" // the service control manager (SCM)
)

// Detect picks the service manager of this OS.
func Detect() System {
	switch runtime.GOOS {
	case "darwin":
		return Launchd
	case "windows":
		return Windows
	}
	return Systemd
}

const (
	// UnitName is the systemd unit; LaunchdLabel names the launchd job.
	UnitName     = "runner-manager.service"
	LaunchdLabel = "com.github.runner-manager"
	// SourceFlag is the daemon flag that names the source binary and turns self-update on. A flag
	// rather than an environment variable: the config loader reads RUNNER_MANAGER_* as overrides,
	// and a misspelt flag fails loudly where a misspelt variable would silently disable upgrades.
	SourceFlag = "--upgrade-source"
	// RecordFile, in the state directory, records what `service install` installed.
	RecordFile = "service.json"
	binaryName = "runner-manager"
)

// Paths locate everything an install touches, as the running service sees them. Root, if set,
// prefixes every path for file operations only (a temp dir in tests, an image tree when packaging);
// the unit still names the unprefixed paths.
type Paths struct {
	Root       string
	UnitDir    string // /etc/systemd/system or /Library/LaunchDaemons
	StateDir   string // /var/lib/runner-manager (systemd's StateDirectory=runner-manager)
	BinDir     string // StateDir/bin: the private copy the service runs
	ConfigFile string // /etc/runner-manager/config.toml (ConfigurationDirectory=runner-manager)
	LogFile    string // launchd and Windows: systemd sends output to the journal
	Exe        string // the binary's file name: runner-manager, or runner-manager.exe on Windows
}

// DefaultPaths are the paths of a real install for sys.
func DefaultPaths(sys System) Paths {
	p := Paths{
		UnitDir:    "/etc/systemd/system",
		StateDir:   "/var/lib/runner-manager",
		BinDir:     "/var/lib/runner-manager/bin",
		ConfigFile: "/etc/runner-manager/config.toml",
	}
	switch sys {
	case Launchd:
		p.UnitDir = "/Library/LaunchDaemons"
		p.LogFile = "/var/log/runner-manager.log"
	case Windows:
		p = WindowsPaths(config.DefaultStateDir)
	}
	return p
}

// WindowsPaths are a Windows install's paths, all under stateDir (config.DefaultStateDir there:
// %ProgramData%\runner-manager), whose ACL install restricts to LocalSystem, the Administrators and
// the service's account. There is no unit file: the service lives in the SCM's registry.
func WindowsPaths(stateDir string) Paths {
	return Paths{
		StateDir:   stateDir,
		BinDir:     filepath.Join(stateDir, "bin"),
		ConfigFile: filepath.Join(stateDir, "config.toml"),
		LogFile:    filepath.Join(stateDir, "logs", "runner-manager.log"),
		Exe:        binaryName + ".exe",
	}
}

// Binary is the private copy the service runs.
func (p Paths) Binary() string {
	if p.Exe != "" {
		return filepath.Join(p.BinDir, p.Exe)
	}
	return filepath.Join(p.BinDir, binaryName)
}

// UnitFile is the unit or plist for sys; on Windows, the service's name in the SCM (no file).
func (p Paths) UnitFile(sys System) string {
	switch sys {
	case Launchd:
		return filepath.Join(p.UnitDir, LaunchdLabel+".plist")
	case Windows:
		return WindowsServiceName
	}
	return filepath.Join(p.UnitDir, UnitName)
}

// onDisk maps a service path to where it is under Root.
func (p Paths) onDisk(path string) string {
	if p.Root == "" {
		return path
	}
	return filepath.Join(p.Root, path)
}

// Record is what `service install` wrote down in the state directory: the daemon can find its
// source binary there and `service status`/`uninstall` know what belongs to the install.
type Record struct {
	System      System    `json:"system"`
	Source      string    `json:"source"`
	Binary      string    `json:"binary"`
	Config      string    `json:"config"`
	Unit        string    `json:"unit"`
	Version     string    `json:"version"`
	InstalledAt time.Time `json:"installed_at"`
	// RunnerUsersCreated are the per-slot runner users this install created (those that existed
	// already are not listed).
	RunnerUsersCreated []string `json:"runner_users_created,omitempty"`
	// Notes are what the service manager could not set up, for install to print (not kept).
	Notes []string `json:"-"`
}

// ReadRecord reads the install record from stateDir (an on-disk path); ok is false if there is none.
func ReadRecord(stateDir string) (rec Record, ok bool, err error) {
	path := filepath.Join(stateDir, RecordFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, false, fmt.Errorf("%s is damaged (%w); run `runner-manager service install` again", path, err)
	}
	return rec, true, nil
}

func writeRecord(stateDir string, rec Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(stateDir, RecordFile), append(b, '\n'), 0o644)
}
