package container

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/runner-manager/runner-manager/internal/atomicfile"
)

// StateFile names an attempt's container in its runtime directory: the attempt directory is the
// daemon's, outside the mounted runner root, so a job cannot change it.
const StateFile = "container.json"

// State is the content of StateFile.
type State struct {
	Name string `json:"name"`
}

func writeState(dir string, s State) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, StateFile), data, 0o600); err != nil {
		return fmt.Errorf("record the container's name in %s: %w", dir, err)
	}
	return nil
}

// ReadState returns the container named in runtime directory dir; ok is false when dir names none
// (a host runner's directory, or a container attempt that crashed before naming it, which then
// created nothing).
func ReadState(dir string) (s State, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	if err := json.Unmarshal(data, &s); err != nil || !plainName.MatchString(s.Name) {
		return State{}, false, fmt.Errorf("%s in %s does not name a container: %v", StateFile, dir, err)
	}
	return s, true, nil
}
