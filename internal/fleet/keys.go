package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/runner-manager/runner-manager/config"
)

// keys is the fleet's layout in etcd, all under /runner-manager/<fleet>/ (docs/fleet.md):
//
//	hostid/<host>           the journal host id bound to a host_name (no lease: it outlives restarts)
//	hosts/<host>            membership, under the host's lease
//	leader/<target>/<lease> election candidates (concurrency.Election); the oldest leads
//	config/<target>/<host>  the fingerprint of the config a host serves the target with (lease)
//	supply/<target>/<host>  a host's starting, idle and free runners of the target (lease)
//	view/<target>           the leader's view of GitHub: runners and queued jobs (leader's lease)
//	wake/<target>           bumped when a host receives a webhook delivery for the target
//	session/<target>        a scale-set target's message session, by id (no lease: outlives its holder)
//	spend/<host>            a host's GitHub points over the last minute, per account (lease)
type keys struct{ root string }

func newKeys(fleet string) keys { return keys{root: "/runner-manager/" + fleet + "/"} }

func (k keys) hostID(host string) string         { return k.root + "hostid/" + host }
func (k keys) member(host string) string         { return k.root + "hosts/" + host }
func (k keys) members() string                   { return k.root + "hosts/" }
func (k keys) leader(target string) string       { return k.root + "leader/" + target + "/" }
func (k keys) configs(target string) string      { return k.root + "config/" + target + "/" }
func (k keys) config(target, host string) string { return k.configs(target) + host }
func (k keys) supplies(target string) string     { return k.root + "supply/" + target + "/" }
func (k keys) supply(target, host string) string { return k.supplies(target) + host }
func (k keys) view(target string) string         { return k.root + "view/" + target }
func (k keys) wake(target string) string         { return k.root + "wake/" + target }
func (k keys) session(target string) string      { return k.root + "session/" + target }
func (k keys) spends() string                    { return k.root + "spend/" }
func (k keys) spend(host string) string          { return k.spends() + host }

// parse splits a key of the fleet into its kind and parts ("supply", target, host).
func (k keys) parse(key string) (kind string, parts []string) {
	rest, ok := strings.CutPrefix(key, k.root)
	if !ok {
		return "", nil
	}
	all := strings.Split(rest, "/")
	return all[0], all[1:]
}

// Fingerprint is what hosts must agree on to share a target: what its runners are (identity,
// labels, group, version) and how many the fleet keeps (min_idle, its schedule, mode). max_runners,
// env and work_dir are each host's own. A target without a schedule hashes as it did before
// schedules existed, so a rolling upgrade does not split the fleet (TestFingerprintOfASchedule).
func Fingerprint(t config.Target) string {
	labels := make([]string, len(t.Labels))
	for i, l := range t.Labels {
		labels[i] = strings.ToLower(l)
	}
	slices.Sort(labels)
	parts := []string{t.Identity(), strings.Join(labels, ","), t.RunnerGroup, t.RunnerVersion, strconv.Itoa(t.MinIdle), t.Mode}
	for _, e := range t.Schedule {
		// Which entry is in force, and so the fleet's min_idle, must be the same on every host;
		// an entry's max_runners bounds each host's own runners.
		parts = append(parts, e.Cron, e.TimeZone, strconv.Itoa(e.MinIdle))
	}
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:6])
}
