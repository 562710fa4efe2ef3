//go:build !linux

package runner

import (
	"context"
	"errors"
	"os/exec"
)

// Cgroups exist on Linux only; elsewhere DetectCgroups says so and runners are ended by uid.
type Cgroups struct{ V1Missing map[string]string }

var errNoCgroups = errors.New("cgroups exist on Linux only")

func DetectCgroups() (*Cgroups, error)                  { return nil, errNoCgroups }
func (c *Cgroups) Root() string                         { return "" }
func (c *Cgroups) create(string) (cgroupPaths, error)   { return cgroupPaths{}, errNoCgroups }
func (c *Cgroups) List() ([]string, error)              { return nil, errNoCgroups }
func (c *Cgroups) Remove(context.Context, string) error { return errNoCgroups }
func startInCgroup(cmd *exec.Cmd, _ cgroupPaths) error  { return cmd.Start() }

func (c *Cgroups) Path(string) string { return "" }

func RunnerCgroupPath(string) (string, error) { return "", errNoCgroups }

func RemoveRunnerCgroup(context.Context, string) error { return errNoCgroups }
