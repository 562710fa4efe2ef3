//go:build e2e

// Package faults is the end-to-end fault suite: the real runner-manager binary against the
// in-process simulator (e2e/harness) while GitHub misbehaves (5xx storms, 429 and secondary limits,
// an exhausted budget, a revoked credential, an offline target, dropped and duplicated webhooks)
// and while its input is bad (malformed config at start and on reload, hostile webhook bodies, a
// corrupt runner download, a full state directory). Every test ends with the harness's leak check.
// It never fixes what it finds: a misbehaving daemon fails its test.
package faults

import (
	"testing"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
