package fleet

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEtcdServerStaysOutOfTheBinary: the embedded etcd server is for tests only (etcdtest); the
// daemon links etcd's client alone.
func TestEtcdServerStaysOutOfTheBinary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/runner-manager/runner-manager/cmd/runner-manager").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := string(out)
	if !strings.Contains(deps, "go.etcd.io/etcd/client/v3\n") {
		t.Fatal("the daemon does not link etcd's client: is the fleet wired?")
	}
	for _, line := range strings.Split(deps, "\n") {
		if strings.HasPrefix(line, "go.etcd.io/etcd/server/") {
			t.Fatalf("the daemon links %s: the etcd server must stay in tests", line)
		}
	}
}
