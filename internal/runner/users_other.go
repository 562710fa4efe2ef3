//go:build !linux && !darwin

package runner

import (
	"context"
	"errors"
)

var errNoSlotUsers = errors.New("per-slot runner users are supported on Linux and macOS only; set daemon.runner_user = \"daemon\"")

func killUID(context.Context, uint32, uint32) error { return errNoSlotUsers }

// noAccounts is the accountDB of an OS without per-slot users: every use says so.
type noAccounts struct{}

func osAccounts() accountDB { return noAccounts{} }

func (noAccounts) lookup(context.Context, string) (User, error) { return User{}, errNoSlotUsers }
func (noAccounts) create(context.Context, string, int) error    { return errNoSlotUsers }
func (noAccounts) list(context.Context) ([]string, error)       { return nil, errNoSlotUsers }
func (noAccounts) remove(context.Context, User) error           { return errNoSlotUsers }
func (noAccounts) howToCreate(string) string                    { return "not possible on this OS" }
