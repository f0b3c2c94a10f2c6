package shale_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale"
)

// lockedBuffer is a bytes.Buffer for a logger that background goroutines
// write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A database that stays open keeps its MANIFEST near MaxManifestFileSize:
// flushes and compactions switch it to a new one, the old ones are
// deleted, and a reopen finds every write.
func TestManifestStaysBounded(t *testing.T) {
	const limit = 2 << 10
	var logs lockedBuffer
	opts := &shale.Options{WriteBufferSize: 16 << 10, TargetFileSize: 16 << 10, MaxManifestFileSize: limit,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	db, dir := openDB(t, opts)
	want := map[string]string{}
	maxSize, maxCount := int64(0), 0
	for i := range 12000 {
		k, v := fmt.Sprintf("key%05d", i*7919%12000), fmt.Sprintf("value%d-%s", i, strings.Repeat("x", 40))
		mustPut(t, db, k, v)
		want[k] = v
		if i%250 == 0 {
			ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
			maxCount = max(maxCount, len(ms))
			for _, m := range ms {
				if st, err := os.Stat(m); err == nil {
					maxSize = max(maxSize, st.Size())
				}
			}
		}
	}
	// A switch is logged, then counted; one may come between the reads.
	logged := strings.Count(logs.String(), "started a new MANIFEST")
	m := db.Metrics()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rolls := strings.Count(logs.String(), "started a new MANIFEST")
	if rolls < 3 || m.ManifestSwitches < int64(logged) || m.ManifestSwitches > int64(rolls) {
		t.Fatalf("%d then %d switches to a new MANIFEST logged, %d counted between; LOG:\n%s", logged, rolls, m.ManifestSwitches, logs.String())
	}
	if m.ManifestSize <= 0 || m.ManifestSize > 2*limit {
		t.Errorf("Metrics().ManifestSize = %d; limit %d", m.ManifestSize, limit)
	}
	// One edit may take the MANIFEST past the limit before the switch.
	if maxSize > 2*limit || maxCount > 2 {
		t.Errorf("MANIFEST: up to %d files, up to %d bytes; limit %d", maxCount, maxSize, limit)
	}
	db = reopen(t, dir, opts)
	for k, v := range want {
		wantGet(t, db, k, []byte(v))
	}
	if ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*")); len(ms) != 1 {
		t.Errorf("after reopen: %v, want one MANIFEST", ms)
	}
}

// A negative MaxManifestFileSize keeps one MANIFEST for as long as the
// database is open, as LevelDB does.
func TestManifestNeverSwitched(t *testing.T) {
	var logs lockedBuffer
	opts := &shale.Options{WriteBufferSize: 16 << 10, TargetFileSize: 16 << 10, MaxManifestFileSize: -1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	db, dir := openDB(t, opts)
	first, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	for i := range 3000 {
		mustPut(t, db, fmt.Sprintf("key%05d", i*7919%3000), strings.Repeat("v", 50))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	now, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if strings.Contains(logs.String(), "new MANIFEST") || len(first) != 1 || len(now) != 1 || now[0] != first[0] {
		t.Errorf("MANIFEST %v at Open, %v at Close", first, now)
	}
}
