package shale_test

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	runCrashChildIfAsked()
	os.Exit(m.Run())
}
