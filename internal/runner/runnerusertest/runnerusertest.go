// Package runnerusertest gives tests that create per-slot runner users a prefix of their own
// and removes those users afterwards, even those a killed earlier run left behind.
package runnerusertest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Prefix is this test process's runner user prefix: rmt<pid>-r, so users made by a run that
// was killed can be told from those of a run still going (its pid is alive) and swept.
func Prefix() string { return "rmt" + strconv.Itoa(os.Getpid()) + "-r" }

var testUser = regexp.MustCompile(`^rmt([0-9]+)-r[0-9]+$`)

// Sweep removes (userdel -r) every test runner user of this process and of processes no longer
// alive. Call it at the start and end of TestMain. It returns what it could not remove.
func Sweep() error {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, _, _ := strings.Cut(sc.Text(), ":")
		m := testUser.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		if pid == os.Getpid() || !alive(pid) {
			names = append(names, name)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var failed []string
	for _, name := range names {
		// Kill the user's leftovers first: userdel refuses a user with running processes.
		_ = exec.Command("pkill", "-KILL", "-U", name).Run()
		if out, err := exec.Command("userdel", "-r", name).CombinedOutput(); err != nil {
			// userdel -r exits 12 when the home was already gone; the user is removed anyway.
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 12 {
				failed = append(failed, fmt.Sprintf("%s: %v: %s", name, err, strings.TrimSpace(string(out))))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("remove test runner users: %s", strings.Join(failed, "; "))
	}
	return nil
}

// SweepInMain is Sweep for a TestMain, before and after m.Run: nothing to do unless root (only
// root creates users), and what could not be removed is printed rather than failing the run.
func SweepInMain() {
	if os.Geteuid() != 0 {
		return
	}
	if err := Sweep(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
