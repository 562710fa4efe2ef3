package journal

import (
	"iter"
	"maps"
	"slices"
	"strings"
)

// Room is the one owner of "room for a target": how many more runners a target may start now.
// Every caller asks it: Plan (the hard bound, under the journal's write lock), the engine's pass
// (its fair share) and webhook routing, and the scale-set capacity the daemon reports.
//
// Its hard part is promise 3: the host's and the target's max_runners, counted from the live slot
// leases (every non-terminal attempt), which only Plan's check under the write lock enforces across
// concurrent loops and restarts. Its fair part divides the host's slots among the targets that want
// runners, round-robin with each target's max_runners as its cap (Fair), so one busy target cannot
// take every slot while another's jobs wait. Pure; pinned by TestRoom.
type Room struct {
	HostMax int            // the daemon's max_runners
	held    map[string]int // live leases by target
	total   int            // every live lease
}

// RoomOf is the room of a host of hostMax slots whose live leases are the attempts of live (as
// Journal.Live returns them; terminal ones are ignored).
func RoomOf(hostMax int, live []Attempt) Room {
	r := Room{HostMax: hostMax, held: make(map[string]int)}
	for _, a := range live {
		if !a.State.Terminal() {
			r.held[a.Target]++
			r.total++
		}
	}
	return r
}

// Held is how many live leases target holds.
func (r Room) Held(target string) int { return r.held[target] }

// Holders yields each target that holds live leases, with how many.
func (r Room) Holders() iter.Seq2[string, int] { return maps.All(r.held) }

// Total is how many live leases the host holds.
func (r Room) Total() int { return r.total }

// Left is target's room by its own max_runners alone: negative when it holds more (a lowered
// max_runners), which plan reads as "reap before starting".
func (r Room) Left(target string, targetMax int) int { return targetMax - r.held[target] }

// Hard is how many more runners target (capped at targetMax) may start by the hard bounds alone:
// the host's free slots and the target's. A limit of 0 or less pauses launches.
func (r Room) Hard(target string, targetMax int) int {
	return max(min(r.HostMax-r.total, r.Left(target, targetMax)), 0)
}

// Claim is one target's part in the division of the host's slots.
type Claim struct {
	Target string
	Max    int // the target's max_runners: its cap
	// Want is how many runners it wants beyond those it holds: its waiting jobs (and min_idle)
	// not covered by its idle and starting runners.
	Want int
}

// Fair is Hard further bounded by target's fair share of the host: the host's slots are dealt
// round-robin, one at a time in target name order, to the targets of claims that still want one,
// a target wanting at most min(max_runners, held + Want); a target that holds leases and makes no
// claim keeps what it holds. A target's room is its share less what it holds, so a target over its
// share (it took the slots while it was alone) starts nothing until it falls back under it, and
// every slot it frees goes to the targets under theirs. claims should include target's own.
func (r Room) Fair(target string, targetMax int, claims []Claim) int {
	return min(r.Hard(target, targetMax), max(r.share(target, claims)-r.held[target], 0))
}

// share is target's part of the host's slots (see Fair): water-filling, which is what dealing one
// slot at a time in turn comes to, computed in O(n log n) for n claims.
func (r Room) share(target string, claims []Claim) int {
	type want struct {
		name string
		n    int
	}
	wants := make([]want, 0, len(claims)+len(r.held))
	claimed := make(map[string]bool, len(claims))
	for _, c := range claims {
		if claimed[c.Target] {
			continue
		}
		claimed[c.Target] = true
		wants = append(wants, want{c.Target, max(min(c.Max, r.held[c.Target]+max(c.Want, 0)), 0)})
	}
	for name, n := range r.held {
		if !claimed[name] {
			wants = append(wants, want{name, n})
		}
	}
	// Smallest wants first (ties in name order): each takes all it wants while that is no more
	// than an even part of what is left; the rest split what is left evenly, the remainder one
	// slot each in name order, as a round-robin deal would leave it.
	slices.SortFunc(wants, func(a, b want) int {
		if a.n != b.n {
			return a.n - b.n
		}
		return strings.Compare(a.name, b.name)
	})
	left := max(r.HostMax, 0)
	for i, w := range wants {
		rest := len(wants) - i
		if w.n*rest <= left {
			if w.name == target {
				return w.n
			}
			left -= w.n
			continue
		}
		part, extra := left/rest, left%rest
		names := make([]string, 0, rest)
		for _, o := range wants[i:] {
			names = append(names, o.name)
		}
		slices.Sort(names)
		k := slices.Index(names, target)
		if k < 0 {
			return 0
		}
		if k < extra {
			return part + 1
		}
		return part
	}
	return 0
}
