package ikey

import "bytes"

// Separator returns a short internal key k with a <= k < b, for index
// blocks: the user key is shortened as LevelDB's bytewise comparator does
// (FindShortestSeparator) and, if it changed, given the largest trailer so
// that it still sorts before every version of b's user key. a < b is
// required. The result may be appended into dst.
func Separator(dst, a, b []byte) []byte {
	ua, ub := UserKey(a), UserKey(b)
	n := 0
	for n < len(ua) && n < len(ub) && ua[n] == ub[n] {
		n++
	}
	if n < len(ua) && n < len(ub) {
		if c := ua[n]; c < 0xff && c+1 < ub[n] {
			short := append(append(dst[:0:0], ua[:n]...), c+1)
			if bytes.Compare(short, ub) < 0 {
				return Append(dst, short, MaxSeq, KindSeek)
			}
		}
	}
	return append(dst, a...)
}

// Successor returns a short internal key k >= a, for the index entry of a
// table's last block (LevelDB's FindShortSuccessor): the first byte that
// can be incremented is, and the rest is cut off.
func Successor(dst, a []byte) []byte {
	ua := UserKey(a)
	for i, c := range ua {
		if c != 0xff {
			short := append(append(dst[:0:0], ua[:i]...), c+1)
			return Append(dst, short, MaxSeq, KindSeek)
		}
	}
	return append(dst, a...)
}
