//go:build !unix

package main

import "os"

// notifyResize does nothing where no SIGWINCH exists (a Windows console): top takes the size at
// start only.
func notifyResize(chan<- os.Signal) {}
