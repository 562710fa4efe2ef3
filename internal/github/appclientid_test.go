package github

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runner-manager/runner-manager/config"
	"github.com/runner-manager/runner-manager/internal/ghsim"
)

// TestAppClientIDSignsTheJWT: with app_client_id (and no app_id) the App JWT's iss is the client
// ID, so GitHub finds the App and the installation serves; another App's client ID is refused
// as a bad credential whose message names the client ID and the key to fix.
func TestAppClientIDSignsTheJWT(t *testing.T) {
	s := newSim(t)
	s.installApp("acme")
	c, _ := s.appClientAs(config.GitHub{AppClientID: ghsim.AppClientID(42)})
	ctx := context.Background()
	if _, err := c.ListRunners(ctx, repoScope); err != nil {
		t.Fatalf("App by client ID: %v", err)
	}
	jit, err := c.GenerateJITConfig(ctx, repoScope, "runner-manager-1", []string{"linux"}, 0, "")
	if err != nil || jit.RunnerID == 0 {
		t.Fatalf("JIT as the App by client ID: %v", err)
	}

	other := ghsim.AppClientID(44) // no such App
	c, _ = s.appClientAs(config.GitHub{AppClientID: other})
	_, err = c.ListRunners(ctx, repoScope)
	var ue *UnauthorizedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "GitHub App "+other) || !strings.Contains(err.Error(), "app_client_id") {
		t.Fatalf("unknown client ID: err = %v", err)
	}
}
