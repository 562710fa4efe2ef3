//go:build !linux

package runner

import (
	"context"
	"errors"
)

func killUID(context.Context, uint32, uint32) error {
	return errors.New("per-slot runner users are supported on Linux only; set daemon.runner_user = \"daemon\"")
}
