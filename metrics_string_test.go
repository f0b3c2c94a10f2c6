package shale_test

import (
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// TestMetricsStringScoreAbove: a level above the base level that holds
// tables shows its score as "above", not the picker's sentinel.
func TestMetricsStringScoreAbove(t *testing.T) {
	var m shale.Metrics
	m.BaseLevel = 6
	m.Levels[3].Tables, m.Levels[3].Bytes, m.Levels[3].Score = 1, 1<<20, 1e6
	s := m.String()
	if strings.Contains(s, "1000000") || !strings.Contains(s, "above") {
		t.Fatalf("Metrics.String:\n%s", s)
	}
}
