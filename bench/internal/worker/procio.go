package worker

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// ioCounters are the write counters of /proc/self/io.
type ioCounters struct {
	// wchar is every byte handed to write-like syscalls (write, pwrite,
	// writev, ...), whether or not it reached a disk. Stores that write
	// through mmap (Badger) bypass it.
	wchar int64
	// writeBytes is what the process caused to be sent to storage: pages it
	// dirtied in the page cache, including through shared mappings. Zero on
	// file systems without writeback accounting (tmpfs).
	writeBytes int64
}

// readIOCounters reads this process's counters. Where /proc/self/io does not
// exist (not Linux), it returns zeros.
func readIOCounters() (ioCounters, error) {
	data, err := os.ReadFile("/proc/self/io")
	if os.IsNotExist(err) {
		return ioCounters{}, nil
	}
	if err != nil {
		return ioCounters{}, err
	}
	return parseIOCounters(data), nil
}

func parseIOCounters(data []byte) ioCounters {
	var c ioCounters
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, value, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
		if err != nil {
			continue
		}
		switch string(name) {
		case "wchar":
			c.wchar = v
		case "write_bytes":
			c.writeBytes = v
		}
	}
	return c
}

// dirBytes returns the sum of the sizes of every regular file under dir.
func dirBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}
