//go:build race

package shale_test

// raceDetector: the race detector slows compactions several times more
// than writes, so flow control holds the tree nearer its limits.
const raceDetector = true
