//go:build race

package engine

// raceBuild is true when the tests run under the race detector (TestIdleLoopStacks).
const raceBuild = true
