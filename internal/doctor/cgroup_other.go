//go:build !linux

package doctor

import "errors"

// Cgroup2 says there are none: cgroups exist on Linux only.
func Cgroup2() (string, error) { return "", errors.New("cgroups exist on Linux only") }
