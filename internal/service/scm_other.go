//go:build !windows

package service

import "errors"

// systemSCM is the host's service control manager: there is none off Windows.
func systemSCM() (SCM, error) {
	return nil, errors.New("the Windows service control manager exists only on Windows")
}
