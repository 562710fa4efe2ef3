package journal

import (
	"fmt"
	"testing"
)

// leases is n live attempts of each target, as Live returns them.
func leases(held map[string]int) []Attempt {
	var out []Attempt
	for name, n := range held {
		for i := range n {
			out = append(out, Attempt{ID: fmt.Sprintf("%s-%d", name, i), Target: name, State: StateStarted})
		}
	}
	return out
}

func TestRoom(t *testing.T) {
	tests := []struct {
		name      string
		hostMax   int
		held      map[string]int
		claims    []Claim
		target    string
		targetMax int
		hard      int
		fair      int
	}{
		{name: "alone: the host's slots up to max_runners", hostMax: 8, target: "a", targetMax: 4,
			claims: []Claim{{"a", 4, 10}}, hard: 4, fair: 4},
		{name: "alone, host smaller than the target", hostMax: 3, target: "a", targetMax: 10,
			claims: []Claim{{"a", 10, 10}}, hard: 3, fair: 3},
		{name: "limit 0 pauses", hostMax: 8, target: "a", targetMax: 0,
			claims: []Claim{{"a", 0, 5}}, hard: 0, fair: 0},
		{name: "host full", hostMax: 2, held: map[string]int{"a": 1, "b": 1}, target: "a", targetMax: 4,
			claims: []Claim{{"a", 4, 3}}, hard: 0, fair: 0},
		{name: "two compete: half each", hostMax: 8, target: "a", targetMax: 8,
			claims: []Claim{{"a", 8, 30}, {"b", 8, 17}}, hard: 8, fair: 4},
		{name: "the starvation case: b's two killed attempts count as its held", hostMax: 8,
			held: map[string]int{"b": 2}, target: "b", targetMax: 8,
			claims: []Claim{{"a", 8, 30}, {"b", 8, 15}}, hard: 6, fair: 2},
		{name: "the starvation case, the busy target", hostMax: 8,
			held: map[string]int{"b": 2}, target: "a", targetMax: 8,
			claims: []Claim{{"a", 8, 30}, {"b", 8, 15}}, hard: 6, fair: 4},
		{name: "a target over its share starts nothing", hostMax: 8, held: map[string]int{"a": 6}, target: "a", targetMax: 8,
			claims: []Claim{{"a", 8, 10}, {"b", 8, 5}}, hard: 2, fair: 0},
		{name: "the other takes the free slots up to its share", hostMax: 8, held: map[string]int{"a": 6}, target: "b", targetMax: 8,
			claims: []Claim{{"a", 8, 10}, {"b", 8, 5}}, hard: 2, fair: 2},
		{name: "what one does not want goes to the other", hostMax: 8, target: "a", targetMax: 8,
			claims: []Claim{{"a", 8, 30}, {"b", 8, 1}}, hard: 8, fair: 7},
		{name: "max_runners caps a share, the rest goes to the others", hostMax: 9, target: "c", targetMax: 8,
			claims: []Claim{{"a", 2, 30}, {"b", 8, 30}, {"c", 8, 30}}, hard: 8, fair: 3},
		{name: "the remainder goes round-robin in name order: first", hostMax: 8, target: "a", targetMax: 8,
			claims: []Claim{{"a", 8, 9}, {"b", 8, 9}, {"c", 8, 9}}, hard: 8, fair: 3},
		{name: "the remainder goes round-robin in name order: last", hostMax: 8, target: "c", targetMax: 8,
			claims: []Claim{{"a", 8, 9}, {"b", 8, 9}, {"c", 8, 9}}, hard: 8, fair: 2},
		{name: "a target without a claim keeps what it holds", hostMax: 8, held: map[string]int{"d": 3}, target: "a", targetMax: 8,
			claims: []Claim{{"a", 8, 30}}, hard: 5, fair: 5},
		{name: "a target wanting nothing takes nothing", hostMax: 8, target: "a", targetMax: 8,
			claims: []Claim{{"a", 8, 0}, {"b", 8, 3}}, hard: 8, fair: 0},
		{name: "idle targets do not dilute the share", hostMax: 4, target: "a", targetMax: 4,
			claims: []Claim{{"a", 4, 9}, {"b", 4, 0}, {"c", 4, 0}, {"d", 4, 0}}, hard: 4, fair: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := RoomOf(tt.hostMax, leases(tt.held))
			if got := r.Hard(tt.target, tt.targetMax); got != tt.hard {
				t.Errorf("Hard = %d, want %d", got, tt.hard)
			}
			if got := r.Fair(tt.target, tt.targetMax, tt.claims); got != tt.fair {
				t.Errorf("Fair = %d, want %d", got, tt.fair)
			}
		})
	}
}

// However the claims change, the fair shares of the host's targets add up to no more than the
// host, and a target's Fair room never exceeds its Hard room.
func TestRoomSharesFitTheHost(t *testing.T) {
	for hostMax := range 12 {
		for want := range 14 {
			claims := []Claim{{"a", 5, want}, {"b", 8, 14 - want}, {"c", 3, want / 2}}
			r := RoomOf(hostMax, leases(map[string]int{"c": 1}))
			sum := 0
			for _, c := range claims {
				sum += r.share(c.Target, claims)
				if f, h := r.Fair(c.Target, c.Max, claims), r.Hard(c.Target, c.Max); f > h {
					t.Fatalf("host %d, want %d: %s Fair %d > Hard %d", hostMax, want, c.Target, f, h)
				}
			}
			if sum > hostMax {
				t.Fatalf("host %d, want %d: shares add up to %d", hostMax, want, sum)
			}
		}
	}
}
