package sstable

import "github.com/shale-db/shale/internal/ikey"

// indexEntry locates one entry of the index block: its key, a separator
// (an internal key), at index[off:off+klen], and its block handle right
// after, hlen bytes long. p0 and p1 are the first 16 bytes of the key's
// user key (ikey.Prefixes), so that most probes of a search compare two
// integers and touch no key bytes; h is the handle, decoded.
type indexEntry struct {
	p0, p1 uint64
	h      BlockHandle
	off    uint32
	klen   uint16
	hlen   uint8
}

// buildIndexTable lists the entries of an index block for Get's binary
// search, which then compares keys in place instead of decoding each
// probe's entry header (a Get probes one table per level, and most never
// reach a data block: the filter, which needs the block's handle, says
// no). It returns nil, leaving Get to the block iterator, unless every
// entry is a restart point that shares nothing with the one before (as
// LevelDB, goleveldb and shale write index blocks) and the keys and handles
// fit the entry's fields. 40 bytes per data block.
func buildIndexTable(index []byte, file string, blockOff int64, alloc func(n int) []indexEntry) []indexEntry {
	var it blockIter
	if it.init(index, true, file, blockOff) != nil || it.numRestarts == 0 {
		return nil
	}
	var tab []indexEntry
	if alloc != nil {
		tab = alloc(it.numRestarts)
	} else {
		tab = make([]indexEntry, it.numRestarts)
	}
	for i := range tab {
		off, ok := it.restart(i)
		if !ok {
			return nil
		}
		shared, unshared, vlen, p, ok := it.decodeHeader(off)
		if !ok || shared != 0 || unshared > 0xffff || vlen > 0xff || p > 0xffffffff {
			return nil
		}
		end := p + unshared + vlen
		next := it.restartsOff
		if i+1 < len(tab) {
			if next, ok = it.restart(i + 1); !ok {
				return nil
			}
		}
		if end != next {
			return nil // entries between restart points
		}
		e := indexEntry{off: uint32(p), klen: uint16(unshared), hlen: uint8(vlen)}
		k := indexKey(index, e)
		if !ikey.Valid(k) {
			return nil
		}
		e.p0, e.p1 = ikey.Prefixes(ikey.UserKey(k))
		var n int
		if e.h, n = decodeHandle(indexHandle(index, e)); n == 0 {
			return nil // the block iterator reports it
		}
		tab[i] = e
	}
	// The keys must ascend, as the block iterator would find them.
	for i := 1; i < len(tab); i++ {
		if ikey.Compare(indexKey(index, tab[i-1]), indexKey(index, tab[i])) >= 0 {
			return nil
		}
	}
	return tab
}

func indexKey(index []byte, e indexEntry) []byte {
	return index[e.off : e.off+uint32(e.klen)]
}

func indexHandle(index []byte, e indexEntry) []byte {
	o := e.off + uint32(e.klen)
	return index[o : o+uint32(e.hlen)]
}

// seekIndex returns the first entry whose key is >= key, or len(tab). key
// is an internal key (Get's seek key).
func seekIndex(index []byte, tab []indexEntry, key []byte) int {
	p0, p1 := ikey.Prefixes(ikey.UserKey(key))
	lo, hi := 0, len(tab)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		e := &tab[m]
		var less bool
		switch {
		case e.p0 != p0:
			less = e.p0 < p0
		case e.p1 != p1:
			less = e.p1 < p1
		default:
			less = ikey.Compare(indexKey(index, *e), key) < 0
		}
		if less {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
