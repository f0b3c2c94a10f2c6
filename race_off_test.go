//go:build !race

package shale

const raceEnabled = false
