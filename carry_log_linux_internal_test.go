//go:build linux && (amd64 || arm64)

package shale

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/shale-db/shale/wal"
)

// Records carried forward into a mapped WAL do not go through its mapping:
// a megabyte of them, or 300 KB (past the middle of the first window, where
// the next is prepared), leaves at most a few pages of it resident
// (through the mapping, a window of it was: up to a megabyte of Open's
// memory); nor do the appends after them populate the next window, which
// the writes with pwritev had no use for.
func TestCarriedLogLeavesMappingCold(t *testing.T) {
	for _, n := range []int{partialPastMiddle(t), 10000} {
		dir := t.TempDir()
		recs, after := carryRecords(n, false)
		writeCarriedLog(t, dir, 1, true, recs, after, func(name, when string) {
			rss, mapped := mappedResident(t, name)
			if !mapped {
				t.Skip("the log is not appended through a mapping on this file system")
			}
			t.Logf("%d records, %s: %d KiB of the log's mappings resident", n, when, rss>>10)
			// The appends after the carry copy some 40 KB into the
			// mapping; a populated window would be 512 KiB.
			if rss > 128<<10 {
				t.Errorf("%d records, %s: %d KiB of the log's mappings resident, want at most 128", n, when, rss>>10)
			}
		})
	}
}

// partialPastMiddle returns a count of carryRecords whose log ends past the
// middle of the first mapping window (256 KiB) in a partial block of a few
// KiB: the Writer's last write, less than a block, which went into the
// mapping and then had the next window populated.
func partialPastMiddle(t *testing.T) int {
	// carryRecords(n) begins with carryRecords(m)'s records for m < n.
	recs, _ := carryRecords(4000, false)
	w := wal.NewWriter(io.Discard)
	for i, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
		if size := w.Size(); size > 280<<10 && size%wal.BlockSize > 1<<10 && size%wal.BlockSize < 6<<10 {
			return i + 1
		}
	}
	t.Fatal("no count of records ends in a short partial block")
	return 0
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
