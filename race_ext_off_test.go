//go:build !race

package shale_test

const raceDetector = false
