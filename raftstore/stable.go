package raftstore

import (
	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale"
)

// ErrKeyNotFound is returned, unwrapped, by Get and GetUint64 for a key
// that has no value. Its text is exactly "not found", without this
// package's prefix: hashicorp/raft recognises a fresh store by comparing
// the error's text with that string when it starts.
var ErrKeyNotFound = errors.New("not found")

// Set stores val under key, with shale.Sync: when it returns, the value
// is on disk.
func (s *Store) Set(key, val []byte) error {
	if s.readOnly {
		return shale.ErrReadOnly
	}
	if err := s.db.Put(stableKey(key), val, shale.Sync); err != nil {
		return errors.Wrapf(err, "raftstore: set %q", key)
	}
	return nil
}

// Get returns the value stored under key, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, err := s.db.Get(stableKey(key))
	if errors.Is(err, shale.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, errors.Wrapf(err, "raftstore: get %q", key)
	}
	return v, nil
}

// SetUint64 stores val under key as 8 bytes big-endian, with shale.Sync.
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, appendUint64(nil, val))
}

// GetUint64 returns the uint64 stored under key by SetUint64, or
// ErrKeyNotFound. A value that is not 8 bytes long is an error.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	n, err := readUint64(v)
	if err != nil {
		return 0, errors.Wrapf(err, "raftstore: key %q", key)
	}
	return n, nil
}
