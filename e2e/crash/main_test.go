//go:build e2e

package crash

import (
	"flag"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/e2e/harness"
)

var (
	rounds = flag.Int("rounds", envInt("ROUNDS", 1),
		"repetitions of every crash point, and kill -9 rounds of the random test (env ROUNDS)")
	seed = flag.Uint64("seed", uint64(envInt("SEED", int(time.Now().UnixNano()%1_000_000_000))),
		"seed of the random kill test's job stream and kill moments; a failure prints it (env SEED)")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	flag.Parse()
	harness.Main(m)
}
