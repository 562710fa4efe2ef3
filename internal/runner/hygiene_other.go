//go:build !linux && !darwin

package runner

import "errors"

func scrubUser(User) error {
	return errors.New("per-slot runner users are supported on Linux only; set daemon.runner_user = \"daemon\"")
}
