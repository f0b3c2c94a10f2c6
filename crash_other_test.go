//go:build !unix

package shale_test

// The crash test needs SIGKILL; elsewhere there is no child to run.
func runCrashChildIfAsked() {}
