package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestCrashtest(t *testing.T) {
	dir := t.TempDir()
	out := ok(t, "", "--db", dir, "crashtest", "--cycles", "3", "--min-ms", "50", "--max-ms", "250", "--writers", "3", "--max-ops", "3000")
	m := regexp.MustCompile(`(?m)^cycles: 3, writes acknowledged: (\d+), writes lost: 0$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("crashtest summary missing:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 {
		t.Errorf("crashtest acknowledged no writes:\n%s", out)
	}
	if strings.Count(out, "writer killed after") != 3 {
		t.Errorf("crashtest did not report three cycles:\n%s", out)
	}
	// The database it leaves is sound.
	ok(t, "", "--db", dir, "check")
}

// TestCrashtestDetectsLoss makes the writer acknowledge writes it never
// made: crashtest must count them lost and exit 3, at the first cycle
// whose writer acknowledged anything (on a loaded machine the first
// writer can be killed still opening the database).
func TestCrashtestDetectsLoss(t *testing.T) {
	r := kv(t, "", nil, "--db", t.TempDir(), "crashtest", "--cycles", "5", "--min-ms", "150", "--max-ms", "200",
		"--writers", "2", "--max-ops", "200", "--fault", "lose-acked")
	if r.code != 3 {
		t.Fatalf("crashtest with lost writes: exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`(?m)^cycles: [1-5], writes acknowledged: (\d+), writes lost: (\d+)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("crashtest summary missing:\n%s", r.stdout)
	}
	// It stops at the first cycle that lost writes.
	cycles := regexp.MustCompile(`(?m)^cycle \d+: .*, (\d+) lost$`).FindAllStringSubmatch(r.stdout, -1)
	if len(cycles) == 0 {
		t.Fatalf("crashtest reported no cycle:\n%s", r.stdout)
	}
	for i, c := range cycles {
		if lost := c[1] != "0"; lost != (i == len(cycles)-1) {
			t.Errorf("cycle %d of %d lost %s writes: crashtest must stop at the first that loses any:\n%s", i+1, len(cycles), c[1], r.stdout)
		}
	}
	if lost, _ := strconv.Atoi(m[2]); lost == 0 {
		t.Errorf("crashtest lost nothing:\n%s", r.stdout)
	}
	// A lost put leaves its key missing; a lost delete leaves it present.
	explained := strings.Contains(r.stdout, "is missing") || strings.Contains(r.stdout, "but is present")
	if !explained || !strings.HasPrefix(r.stderr, "kvcli: crashtest: ") {
		t.Errorf("crashtest does not explain the loss:\n%s\n%s", r.stdout, r.stderr)
	}
}

func TestCrashtestRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "--db", dir, "put", "k", "v")
	want(t, 2, "is not empty", "--db", dir, "crashtest", "--cycles", "1")
}
