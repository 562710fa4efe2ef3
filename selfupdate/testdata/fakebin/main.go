// Command fakebin stands in for runner-manager in selfupdate's tests. It prints what the real binary
// prints for --version (from the same internal/version variable, set by the same -ldflags), and Mode,
// also set by -ldflags, makes it misbehave the ways a broken candidate can.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/runner-manager/runner-manager/internal/version"
)

// Mode is "" (behave), "fail" (exit 1), "hang" (never answer) or "garbage" (print nonsense).
var Mode = ""

func main() {
	if len(os.Args) < 2 || os.Args[1] != "--version" {
		fmt.Fprintln(os.Stderr, "fakebin: only --version is implemented")
		os.Exit(2)
	}
	switch Mode {
	case "fail":
		fmt.Fprintln(os.Stderr, "fakebin: failing on purpose")
		os.Exit(1)
	case "hang":
		time.Sleep(time.Hour) // select{} would be caught by the deadlock detector
	case "garbage":
		fmt.Println("\x7fELF? segmentation fault")
		return
	}
	fmt.Println(version.String())
}
