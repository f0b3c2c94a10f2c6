// Package iterator defines the one iterator contract that every internal
// iterator (memtable, table block, table, level, merging) implements.
//
// Keys are encoded internal keys (see package ikey) in ikey.Compare order.
// An iterator starts unpositioned; First, Last, SeekGE and SeekLT position
// it, Next and Prev move it. Each positioning method reports whether the
// iterator now stands at an entry. When it returns false the iterator is
// exhausted or has failed: Err tells which. Next after exhaustion going
// forward stays false; Prev after a forward exhaustion is not defined for
// all implementations: reposition with Last or SeekLT instead.
//
// The slices returned by Key and Value are valid until the next positioning
// call or Close, and must not be modified. An iterator is not safe for
// concurrent use.
package iterator

// Iterator is the internal iterator contract.
type Iterator interface {
	// First moves to the smallest key.
	First() bool
	// Last moves to the largest key.
	Last() bool
	// SeekGE moves to the smallest key >= key (an internal key).
	SeekGE(key []byte) bool
	// SeekLT moves to the largest key < key (an internal key).
	SeekLT(key []byte) bool
	// Next moves to the following key.
	Next() bool
	// Prev moves to the preceding key.
	Prev() bool
	// Key returns the current internal key.
	Key() []byte
	// Value returns the current value.
	Value() []byte
	// Err returns the error that stopped the iterator, if any.
	Err() error
	// Close releases the iterator's resources and returns Err. Calling it
	// twice is safe.
	Close() error
}

// Scanner is implemented by iterators that count the blocks they read in
// file order (table iterators), so that an iterator over a run of tables
// can carry the count from one table's iterator to the next: a scan that
// crosses tables then reads ahead at once in the next table, and once it
// is long it leaves the block cache alone, as it would within one table,
// rather than starting over at every table.
type Scanner interface {
	// ScanRun returns how many blocks in a row the iterator has read,
	// each where the one before ended.
	ScanRun() int
	// ContinueScan tells an iterator not yet positioned that its first
	// block continues a run of n blocks.
	ContinueScan(n int)
}

// Empty returns an iterator over nothing that reports err (which may be nil)
// from Err and Close.
func Empty(err error) Iterator { return emptyIter{err} }

type emptyIter struct{ err error }

var _ Iterator = emptyIter{}

func (emptyIter) First() bool        { return false }
func (emptyIter) Last() bool         { return false }
func (emptyIter) SeekGE([]byte) bool { return false }
func (emptyIter) SeekLT([]byte) bool { return false }
func (emptyIter) Next() bool         { return false }
func (emptyIter) Prev() bool         { return false }
func (emptyIter) Key() []byte        { return nil }
func (emptyIter) Value() []byte      { return nil }
func (e emptyIter) Err() error       { return e.err }
func (e emptyIter) Close() error     { return e.err }
