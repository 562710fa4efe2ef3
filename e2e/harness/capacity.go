package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// SampleEvery is the CapacityMonitor's sampling period.
const SampleEvery = 50 * time.Millisecond

// CapacityMonitor samples, every SampleEvery, the runners the simulator lists (per scope and in
// total) and the runner attempts with a live process under the state directory, and keeps the
// maxima. Registered-but-not-started runners count too: the daemon holds a capacity slot for a
// runner from before its registration until after its deregistration, so no sample may exceed it.
type CapacityMonitor struct {
	sim      *Sim
	stateDir string
	stop     chan struct{}
	done     chan struct{}

	mu      sync.Mutex
	max     CapacityReport
	scanErr error
}

// CapacityReport holds the maxima a CapacityMonitor saw.
type CapacityReport struct {
	Samples    int
	ByScope    map[string]int // runner-manager-* runners listed per scope ("owner/name" or org)
	Registered int            // runner-manager-* runners listed in total
	Processes  int            // attempts with a live process under the state directory
}

func (r CapacityReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d samples: max %d registered, %d with a live process", r.Samples, r.Registered, r.Processes)
	for _, scope := range slices.Sorted(maps.Keys(r.ByScope)) {
		fmt.Fprintf(&b, "; %s: %d", scope, r.ByScope[scope])
	}
	return b.String()
}

// StartCapacityMonitor starts sampling until Stop or the end of the test.
func StartCapacityMonitor(t testing.TB, sim *Sim, stateDir string) *CapacityMonitor {
	m := &CapacityMonitor{sim: sim, stateDir: stateDir, stop: make(chan struct{}), done: make(chan struct{}),
		max: CapacityReport{ByScope: map[string]int{}}}
	go m.run()
	t.Cleanup(func() { m.Stop() })
	return m
}

func (m *CapacityMonitor) run() {
	defer close(m.done)
	tick := time.NewTicker(SampleEvery)
	defer tick.Stop()
	for {
		m.sample()
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
	}
}

func (m *CapacityMonitor) sample() {
	byScope := map[string]int{}
	runners := m.sim.ManagedRunners()
	for _, r := range runners {
		byScope[strings.ToLower(r.Scope)]++
	}
	live, err := LiveAttempts(m.stateDir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil && m.scanErr == nil {
		m.scanErr = err
	}
	m.max.Samples++
	m.max.Registered = max(m.max.Registered, len(runners))
	m.max.Processes = max(m.max.Processes, len(live))
	for s, n := range byScope {
		m.max.ByScope[s] = max(m.max.ByScope[s], n)
	}
}

// Stop ends sampling (idempotent) and returns the maxima seen.
func (m *CapacityMonitor) Stop() CapacityReport {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
	return m.Report()
}

// Report returns the maxima seen so far.
func (m *CapacityMonitor) Report() CapacityReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.max
	r.ByScope = maps.Clone(m.max.ByScope)
	return r
}

// AssertWithin fails the test if the host-wide count ever exceeded host, or a scope's count its
// bound in perScope (keys "owner/name" or an org login, any case).
func (m *CapacityMonitor) AssertWithin(t testing.TB, host int, perScope map[string]int) {
	t.Helper()
	r := m.Report()
	m.mu.Lock()
	scanErr := m.scanErr
	m.mu.Unlock()
	if scanErr != nil {
		t.Fatalf("harness: capacity monitor: %v", scanErr)
	}
	if r.Registered > host || r.Processes > host {
		t.Errorf("host capacity %d exceeded (promise 3): %s", host, r)
	}
	for scope, bound := range perScope {
		if n := r.ByScope[strings.ToLower(scope)]; n > bound {
			t.Errorf("capacity %d of %s exceeded (promise 3): %s", bound, scope, r)
		}
	}
}
