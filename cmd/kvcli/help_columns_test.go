package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHelpSummariesAligned: in "kvcli help"'s command list, every
// command's summary starts in the same column: on its usage's line (name
// and arguments), or, for a usage too long to share one, alone on the
// next line.
func TestHelpSummariesAligned(t *testing.T) {
	out := ok(t, "", "help")
	_, list, found := strings.Cut(out, "\nCommands:\n")
	if !found {
		t.Fatalf("help has no command list:\n%s", out)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	lines := strings.Split(list, "\n")
	col := -1
	for _, c := range commands {
		if c.hidden {
			continue
		}
		if len(lines) == 0 {
			t.Fatalf("the command list ends before %s:\n%s", c.name, list)
		}
		head := "  " + usage(c)
		line := lines[0]
		lines = lines[1:]
		if !strings.HasPrefix(line, head) {
			t.Fatalf("%s: line %q does not start with %q", c.name, line, head)
		}
		summaryLine, gap := line, strings.TrimPrefix(line, head)
		if line == head { // the summary is alone on the next line
			if len(lines) == 0 {
				t.Fatalf("%s: no summary after its usage", c.name)
			}
			summaryLine, gap = lines[0], lines[0]
			lines = lines[1:]
		} else if !strings.HasPrefix(gap, "  ") {
			t.Errorf("%s: fewer than two spaces between usage and summary: %q", c.name, line)
		}
		if strings.TrimLeft(gap, " ") != c.summary {
			t.Errorf("%s: %q is not spaces and then its summary %q", c.name, gap, c.summary)
			continue
		}
		// The column in characters: what a terminal shows.
		at := utf8.RuneCountInString(strings.TrimSuffix(summaryLine, c.summary))
		if col < 0 {
			col = at
		} else if at != col {
			t.Errorf("%s: summary starts in column %d, the first command's in column %d:\n%s", c.name, at, col, list)
		}
	}
	if len(lines) > 0 {
		t.Errorf("lines after the last command: %q", lines)
	}
}
