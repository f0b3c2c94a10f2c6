package shale

import (
	"bytes"
	"log/slog"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// A switch that cannot close the old MANIFEST reports it (the fault
// sweep's rule: every fault reaches an API call, Close or the log).
func TestManifestSwitchReportsCloseError(t *testing.T) {
	var mu sync.Mutex
	var logs bytes.Buffer
	lw := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	ffs := vfs.NewFault(vfs.NewMem(), nil)
	db, err := reviewOpen(t, ffs, &Options{MaxManifestFileSize: 1, Logger: slog.New(slog.NewTextHandler(lw, nil))})
	if err != nil {
		t.Fatal(err)
	}
	old := db.vs.ManifestNumber()
	ffs.SetInjector(vfs.FailWhen(func(c vfs.Call) bool {
		return c.Op == vfs.OpClose && strings.HasPrefix(path.Base(c.Path), "MANIFEST-")
	}, nil))
	var errs []error
	for i := 0; i < 20 && db.vs.ManifestNumber() == old; i++ {
		errs = append(errs, db.Put([]byte("x"), []byte("y"), Sync), db.Flush())
	}
	ffs.SetInjector(nil)
	errs = append(errs, db.Close())
	mu.Lock()
	defer mu.Unlock()
	if db.vs.ManifestNumber() == old {
		t.Fatal("no switch")
	}
	for _, e := range errs {
		if e != nil {
			return
		}
	}
	if !strings.Contains(logs.String(), "injected") {
		t.Errorf("the failed close of MANIFEST-%06d reached no API call, Close or log", old)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
