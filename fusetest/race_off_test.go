//go:build !race

package fusetest_test

const raceEnabled = false
