//go:build windows

package runner

import "golang.org/x/sys/windows"

// availableBytes is GetDiskFreeSpaceEx's bytes available to the caller (quotas applied). path
// must be a directory.
func availableBytes(path string) (int64, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return 0, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, err
	}
	return int64(avail), nil
}
