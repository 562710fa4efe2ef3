package github

import "maps"

// RepoCounts returns each organization's repository count at its last listing, for the journal:
// with the config they are what the poll plan's stretch is computed from (PlanConfig).
func (c *Client) RepoCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.repoCounts)
}

// SeedRepoCounts gives a new client the counts a previous run learnt (RepoCounts, journaled), for
// organizations it has not listed itself: its first poll plan then costs each organization as it
// was, so the plan's stretch survives a restart instead of starting as if each organization had
// one repository. Its own listings replace them.
func (c *Client) SeedRepoCounts(counts map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.repoCounts == nil {
		c.repoCounts = map[string]int{}
	}
	for org, n := range counts {
		if _, ok := c.repoCounts[org]; !ok && n > 0 {
			c.repoCounts[org] = n
			c.repoCountsVersion++
		}
	}
}
