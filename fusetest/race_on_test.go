//go:build race

package fusetest_test

// raceEnabled: under the race detector a child process takes over a
// second to start here, so TestFaults makes fewer runs.
const raceEnabled = true
