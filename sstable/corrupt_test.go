package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/ikey"
)

// readAll opens b and reads everything: a full scan each way and a Get of
// every model user key. It returns the first error; with no error, what
// it read must equal the model.
func readAll(t *testing.T, b []byte, model []kv) error {
	t.Helper()
	r, err := Open(bytes.NewReader(b), int64(len(b)), ReaderOptions{FileName: "000042.ldb"})
	if err != nil {
		return err
	}
	it := r.NewIter()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(model) || !bytes.Equal(it.Key(), model[i].key) || !bytes.Equal(it.Value(), model[i].val) {
			t.Fatalf("wrong entry %d: %s", i, ikey.String(it.Key()))
		}
		i++
	}
	if err := it.Close(); err != nil {
		return err
	}
	if i != len(model) {
		t.Fatalf("scan returned %d of %d entries without an error", i, len(model))
	}
	it = r.NewIter()
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if i < 0 || !bytes.Equal(it.Key(), model[i].key) {
			t.Fatalf("wrong entry %d going back: %s", i, ikey.String(it.Key()))
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, e := range model {
		v, _, found, err := r.Get(ikey.UserKey(e.key), ikey.Seq(e.key), nil)
		if err != nil {
			return err
		}
		if !found || !bytes.Equal(v, e.val) {
			t.Fatalf("Get(%s) = %v without an error", ikey.String(e.key), found)
		}
	}
	return nil
}

// blockAt returns the handle of the block (or footer) that holds offset off.
func blockAt(t *testing.T, l *Layout, off int64) (BlockHandle, bool) {
	for _, b := range l.Blocks {
		if uint64(off) >= b.Handle.Offset && uint64(off) < b.Handle.Offset+b.Handle.Length+TrailerLen {
			return b.Handle, true
		}
	}
	return BlockHandle{}, false
}

// inFilter reports whether offset off lies in the filter block or its
// trailer.
func inFilter(l *Layout, off int64) bool {
	for _, b := range l.Blocks {
		if b.Kind == "filter" && uint64(off) >= b.Handle.Offset && uint64(off) < b.Handle.Offset+b.Handle.Length+TrailerLen {
			return true
		}
	}
	return false
}

// TestEveryByteFlipped flips each byte of a small table in turn: reading it
// must fail with ErrCorrupt naming the file and the damaged block, or return
// exactly the original entries: for the footer's unused padding, and for
// the filter block, which is then dropped (as LevelDB drops it) and named
// by FilterErr.
func TestEveryByteFlipped(t *testing.T) {
	model := randomEntries(rand.New(rand.NewSource(6)), 60, 60)
	orig := writeTable(t, model, WriterOptions{BlockSize: 256})
	l, err := openTable(t, orig, ReaderOptions{}).Layout()
	if err != nil {
		t.Fatal(err)
	}
	footerOff := int64(len(orig) - FooterLen)
	for off := range orig {
		b := append([]byte(nil), orig...)
		b[off] ^= 0x5a
		err := readAll(t, b, model)
		if err == nil {
			if inFilter(l, int64(off)) {
				ferr := openTable(t, b, ReaderOptions{FileName: "000042.ldb"}).FilterErr()
				if !errors.Is(ferr, ErrCorrupt) {
					t.Fatalf("byte %d flipped in the filter: FilterErr = %v", off, ferr)
				}
				continue
			}
			if int64(off) < footerOff {
				t.Fatalf("byte %d flipped (block %v) went unnoticed", off, l.Blocks)
			}
			continue
		}
		var te *TableError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &te) || te.File != "000042.ldb" {
			t.Fatalf("byte %d flipped: %v", off, err)
		}
		if h, ok := blockAt(t, l, int64(off)); ok && te.Offset != int64(h.Offset) {
			t.Fatalf("byte %d flipped in block %s: error names offset %d: %v", off, h, te.Offset, err)
		}
	}
}

func TestTruncated(t *testing.T) {
	model := randomEntries(rand.New(rand.NewSource(7)), 40, 60)
	orig := writeTable(t, model, WriterOptions{BlockSize: 256})
	for n := 0; n < len(orig); n++ {
		if err := readAll(t, orig[:n], model); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("table cut to %d bytes: %v", n, err)
		}
	}
}

// rewriteBlock replaces the stored bytes and compression byte of the block
// at h, keeping its length, and fixes the checksum so that only the new
// content is wrong.
func rewriteBlock(b []byte, h BlockHandle, content []byte, typ byte) []byte {
	b = append([]byte(nil), b...)
	copy(b[h.Offset:], content)
	b[h.Offset+h.Length] = typ
	binary.LittleEndian.PutUint32(b[h.Offset+h.Length+1:], blockChecksum(b[h.Offset:h.Offset+h.Length], typ))
	return b
}

func firstDataBlock(t *testing.T, b []byte) BlockHandle {
	l, err := openTable(t, b, ReaderOptions{}).Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l.Blocks[0].Handle
}

func TestZstdRefused(t *testing.T) {
	model := randomEntries(rand.New(rand.NewSource(8)), 50, 50)
	orig := writeTable(t, model, WriterOptions{Compression: NoCompression})
	h := firstDataBlock(t, orig)
	b := rewriteBlock(orig, h, orig[h.Offset:h.Offset+h.Length], blockTypeZstd)
	err := readAll(t, b, model)
	if !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "zstd") {
		t.Fatalf("zstd block: %v", err)
	}
	b = rewriteBlock(orig, h, orig[h.Offset:h.Offset+h.Length], 3)
	if err := readAll(t, b, model); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "compression type 3") {
		t.Fatalf("unknown compression: %v", err)
	}
}

func TestSnappyLengthBounded(t *testing.T) {
	model := randomEntries(rand.New(rand.NewSource(9)), 50, 50)
	orig := writeTable(t, model, WriterOptions{Compression: NoCompression})
	h := firstDataBlock(t, orig)
	// A snappy header claiming 0xffffffff decoded bytes, then a literal.
	content := make([]byte, h.Length)
	copy(content, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 'x'})
	b := rewriteBlock(orig, h, content, blockTypeSnappy)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := readAll(t, b, model)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "claims") {
		t.Fatalf("4 GiB snappy claim: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("allocated %d bytes for a bogus snappy header", grew)
	}
	// A claim within the expansion bound that the data does not back.
	content = binary.AppendUvarint(nil, h.Length*2)
	content = append(content, make([]byte, int(h.Length)-len(content))...)
	b = rewriteBlock(orig, h, content, blockTypeSnappy)
	if err := readAll(t, b, model); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("undecodable snappy block: %v", err)
	}
}

// rebuildTail returns the table with its metaindex replaced by one entry,
// name -> the original filter handle, and the filter block's content
// replaced by filter (if not nil, same length).
func rebuildTail(t *testing.T, orig []byte, name string, filter []byte) []byte {
	r := openTable(t, orig, ReaderOptions{})
	fh := r.metaKeys[0].handle
	b := append([]byte(nil), orig[:r.footer.MetaIndex.Offset]...)
	if filter != nil {
		b = rewriteBlock(b, fh, filter, blockTypeNone)
	}
	var meta blockWriter
	meta.restartInterval = 16
	meta.add([]byte(name), appendHandle(nil, fh))
	mb := meta.finish()
	mh := BlockHandle{Offset: uint64(len(b)), Length: uint64(len(mb))}
	b = append(b, mb...)
	b = append(b, blockTypeNone, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[len(b)-4:], blockChecksum(mb, blockTypeNone))
	ih := r.footer.Index
	idx := orig[ih.Offset : ih.Offset+ih.Length+TrailerLen]
	ih.Offset = uint64(len(b))
	b = append(b, idx...)
	return appendFooter(b, Footer{MetaIndex: mh, Index: ih})
}

func TestFilterNames(t *testing.T) {
	var model []kv
	for i := 0; i < 300; i++ {
		model = append(model, kv{ikey.Make([]byte(fmt.Sprintf("k%05d", i)), 2, ikey.KindSet), []byte("v")})
	}
	orig := writeTable(t, model, WriterOptions{})
	fh := openTable(t, orig, ReaderOptions{}).metaKeys[0].handle
	// The same filter block with every bit clear (each filter keeps its k
	// byte): used, it would hide every key.
	zeroed := append([]byte(nil), orig[fh.Offset:fh.Offset+fh.Length]...)
	fr, ok := newFilterReader(zeroed)
	if !ok || fr.num == 0 {
		t.Fatal("filter block does not parse")
	}
	for i := 0; i < fr.num; i++ {
		start := binary.LittleEndian.Uint32(fr.offsets[4*i:])
		limit := uint32(len(fr.data))
		if i+1 < fr.num {
			limit = binary.LittleEndian.Uint32(fr.offsets[4*i+4:])
		}
		for j := start; j+1 < limit; j++ {
			zeroed[j] = 0
		}
	}
	for _, tc := range []struct {
		name      string
		used      bool
		wantFound bool
	}{
		{FilterMetaKey, true, false},
		{oldFilterMetaKey, false, true},
		{"filter.someone.elses", false, true},
	} {
		b := rebuildTail(t, orig, tc.name, zeroed)
		r := openTable(t, b, ReaderOptions{})
		if r.HasFilter() != tc.used {
			t.Fatalf("%s: HasFilter %v", tc.name, r.HasFilter())
		}
		_, _, found, err := r.Get([]byte("k00100"), 5, nil)
		if err != nil || found != tc.wantFound {
			t.Fatalf("%s: Get found=%v err=%v, want found=%v", tc.name, found, err, tc.wantFound)
		}
		if !tc.used {
			if err := readAll(t, b, model); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
	}
}

// failReaderAt fails every read that covers offset off.
type failReaderAt struct {
	b   []byte
	off int64
	err error
}

func (f *failReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off <= f.off && f.off < off+int64(len(p)) {
		return 0, f.err
	}
	return bytes.NewReader(f.b).ReadAt(p, off)
}

// tableWithFilter writes a small table and returns its entries, its bytes
// and the offset of its filter block's first byte.
func tableWithFilter(t *testing.T) ([]kv, []byte, int64) {
	t.Helper()
	model := randomEntries(rand.New(rand.NewSource(8)), 60, 60)
	b := writeTable(t, model, WriterOptions{BlockSize: 256})
	l, err := openTable(t, b, ReaderOptions{}).Layout()
	if err != nil {
		t.Fatal(err)
	}
	for off := range b {
		if inFilter(l, int64(off)) {
			return model, b, int64(off)
		}
	}
	t.Fatal("the table has no filter block")
	return nil, nil, 0
}

// TestFilterReadErrorFailsOpen: a filter that cannot be read because of an
// I/O error is not damage: Open (of a Reader without a cache, which reads
// its filter at Open) fails with the error, so that it reaches the caller
// and a later Open tries again, rather than a Reader that silently lacks
// its filter for as long as it is cached.
func TestFilterReadErrorFailsOpen(t *testing.T) {
	_, b, filterOff := tableWithFilter(t)
	r, err := Open(&failReaderAt{b: b, off: filterOff, err: syscall.EIO}, int64(len(b)), ReaderOptions{FileName: "000042.ldb"})
	if !errors.Is(err, syscall.EIO) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with the filter unreadable = %v, %v; want an error matching EIO, not ErrCorrupt", r, err)
	}
}

// A Reader with a cache reads its filter at the first Get, not at Open:
// compactions and scans never use it. An I/O error reading it fails the
// Get (as it failed Open when Open read the filter), and the next Get
// reads it again.
func TestFilterReadAtFirstGet(t *testing.T) {
	model, b, filterOff := tableWithFilter(t)
	f := &failReaderAt{b: b, off: -1, err: syscall.EIO}
	r, err := Open(f, int64(len(b)), ReaderOptions{FileName: "000042.ldb", FileNum: 42, Cache: cache.New(1 << 20)})
	if err != nil {
		t.Fatalf("Open read the filter: %v", err)
	}
	defer r.Close()
	it := r.NewScanIter()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != len(model) {
		t.Fatalf("scan: %d entries of %d, %v", n, len(model), err)
	}
	if r.filterRead() {
		t.Fatal("the filter was read by Open or a scan")
	}
	get := func(e kv) {
		t.Helper()
		v, _, found, err := r.Get(ikey.UserKey(e.key), ikey.Seq(e.key), nil)
		if err != nil || !found || !bytes.Equal(v, e.val) {
			t.Fatalf("Get(%s) = %q, %v, %v", ikey.String(e.key), v, found, err)
		}
	}
	f.off = filterOff // the filter unreadable
	for _, e := range model {
		u := ikey.UserKey(e.key)
		if _, _, _, err := r.Get(u, ikey.Seq(e.key), nil); !errors.Is(err, syscall.EIO) {
			t.Fatalf("Get(%s) with the filter unreadable = %v, want the I/O error", ikey.String(e.key), err)
		}
	}
	if r.filterRead() {
		t.Fatal("a filter that failed to read counts as read")
	}
	f.off = -1 // the disk recovers
	get(model[0])
	if !r.filterRead() {
		t.Fatal("the first Get after the I/O error did not read the filter")
	}
	if v, _, found, err := r.Get([]byte("\xff\xff absent"), ikey.MaxSeq, nil); found || err != nil {
		t.Fatalf("Get of an absent key = %q, %v, %v", v, found, err)
	}
}
