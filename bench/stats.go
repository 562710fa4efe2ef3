package bench

import (
	"slices"
	"time"
)

// Percentile is the nearest-rank p-th percentile of d (0 for none): the smallest value at or
// below which p percent of the values lie, so p95 of 20 samples is the 19th smallest.
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := (len(s)*p + 99) / 100 // ceil(n*p/100)
	return s[min(max(rank, 1), len(s))-1]
}
