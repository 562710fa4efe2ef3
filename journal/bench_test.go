package journal

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble"
)

// BenchmarkTransitionSynced is the cost of one lifecycle write: one synced pebble batch.
func BenchmarkTransitionSynced(b *testing.B) {
	ctx := context.Background()
	j := openTest(b, b.TempDir(), newFakeClock())
	a := plan(b, j, "t")
	mustTransition(b, j, a.ID, StateRegistered)
	mustTransition(b, j, a.ID, StateDeregistered)
	// deregistered <-> exited is a legal cycle, so every iteration is one real transition.
	next := []State{StateExited, StateDeregistered}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := j.Transition(ctx, a.ID, next[i%2], nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLive10000 is startup recovery's read cost: open a journal holding 10,000 attempts and
// list the live ones, with every attempt live and with 1% live (the rest cleaned, not yet pruned).
func BenchmarkLive10000(b *testing.B) {
	for _, live := range []int{10000, 100} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			dir := b.TempDir()
			seedAttempts(b, dir, 10000, live)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j, err := Open(dir, Options{Logger: discardLogger()})
				if err != nil {
					b.Fatal(err)
				}
				got, err := j.Live(ctx)
				if err != nil || len(got) != live {
					b.Fatalf("Live = %d, %v; want %d", len(got), err, live)
				}
				if err := j.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// seedAttempts writes total attempts, the last live of them non-terminal, in one unsynced batch:
// the fixture only has to exist, and 10,000 synced Plans would dominate the benchmark's run time.
func seedAttempts(b *testing.B, dir string, total, live int) {
	b.Helper()
	j := openTest(b, dir, newFakeClock())
	now := j.now().UTC()
	batch := j.db.NewBatch()
	for i := 1; i <= total; i++ {
		id := fmt.Sprintf("%s-%010d", j.hostID, i)
		a := Attempt{ID: id, Target: fmt.Sprintf("t%d", i%7), Policy: "p", Slot: i % 64, RunnerName: RunnerNamePrefix + id,
			RunnerID: int64(i), Labels: []string{"self-hosted", "linux", "x64"}, RuntimeDir: "/var/lib/runner-manager/runs/" + id,
			ShimPID: 1000 + i, ShimStart: uint64(i), State: StateStarted, CreatedAt: now, UpdatedAt: now}
		if i <= total-live {
			a.State = StateCleaned
		} else {
			_ = batch.Set(liveKey(id), encodeLive(a), nil)
		}
		_ = batch.Set(attemptKey(id), encodeAttempt(a), nil)
	}
	_ = batch.Set(keySeq, []byte(fmt.Sprint(total)), nil)
	if err := batch.Commit(pebble.NoSync); err != nil {
		b.Fatal(err)
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
}
