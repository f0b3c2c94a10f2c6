//go:build linux && (amd64 || arm64)

package shale

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Records carried forward into a mapped WAL do not go through its mapping:
// a megabyte of them leaves at most a page or two of it resident (through
// the mapping, a window of it was: a megabyte of Open's memory).
func TestCarriedLogLeavesMappingCold(t *testing.T) {
	dir := t.TempDir()
	recs, after := carryRecords(10000, false) // a megabyte
	writeCarriedLog(t, dir, 1, true, recs, after, func(name string) {
		rss, mapped := mappedResident(t, name)
		if !mapped {
			t.Skip("the log is not appended through a mapping on this file system")
		}
		t.Logf("%d KiB of the log's mappings resident", rss>>10)
		if rss > 16<<10 {
			t.Errorf("%d KiB of the log's mappings resident after carrying its records, want at most 16", rss>>10)
		}
	})
}

// mappedResident sums the resident bytes of the process's mappings of the
// file name, from /proc/self/smaps, and says whether it is mapped at all.
func mappedResident(t *testing.T, name string) (rss int64, mapped bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if strings.Contains(fields[0], "-") && len(fields) >= 5 {
			in = len(fields) >= 6 && fields[5] == name
			mapped = mapped || in
			continue
		}
		if in && fields[0] == "Rss:" && len(fields) >= 2 {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatalf("smaps: %q: %v", line, err)
			}
			rss += kb << 10
		}
	}
	return rss, mapped
}
