package manifest

import (
	stderrors "errors"
	"io"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// FuzzCurrent reads arbitrary CURRENT contents: readCurrent never panics,
// fails with ErrCorrupt on what is not "MANIFEST-<digits>\n", and a number
// it accepts is the one setCurrent writes back the same way.
func FuzzCurrent(f *testing.F) {
	for _, n := range []uint64{1, 12, 999999, 1234567} {
		fs := vfs.NewMem()
		if _, err := setCurrent(fs, "/", n); err != nil {
			f.Fatal(err)
		}
		r, _ := fs.Open(filename.Make("/", filename.Current, 0))
		b, _ := io.ReadAll(r)
		r.Close()
		f.Add(b)
	}
	f.Add([]byte("MANIFEST-000001"))
	f.Add([]byte("MANIFEST-1\nMANIFEST-2\n"))
	f.Add([]byte("000001.log\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := vfs.NewMem()
		w, err := fs.Create(filename.Make("/", filename.Current, 0))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		w.Close()
		num, err := readCurrent(fs, "/")
		if err != nil {
			if !stderrors.Is(err, ErrCorrupt) {
				t.Fatalf("readCurrent(%q): %v, not ErrCorrupt", b, err)
			}
			return
		}
		if _, err := setCurrent(fs, "/", num); err != nil {
			t.Fatal(err)
		}
		if again, err := readCurrent(fs, "/"); err != nil || again != num {
			t.Fatalf("CURRENT %q names %d; rewritten it reads %d, %v", b, num, again, err)
		}
	})
}
