//go:build race

package shale

// raceEnabled: the race detector drops some of what sync.Pool is given,
// so counts of allocations do not hold under it.
const raceEnabled = true
