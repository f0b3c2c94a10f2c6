package raftstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/raftstore"
)

// The tests below check, in our own code, the facts that raft-boltdb's
// store tests check of its store, then this store's own promises.

func newStore(t testing.TB, dir string) *raftstore.Store {
	t.Helper()
	s, err := raftstore.New(dir, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func openTemp(t testing.TB) *raftstore.Store {
	t.Helper()
	s := newStore(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	return s
}

func entry(idx uint64, data string) *raft.Log {
	return &raft.Log{Index: idx, Data: []byte(data)}
}

func entries(first, last uint64) []*raft.Log {
	var logs []*raft.Log
	for i := first; i <= last; i++ {
		logs = append(logs, entry(i, fmt.Sprintf("log%d", i)))
	}
	return logs
}

func mustStore(t testing.TB, s *raftstore.Store, logs []*raft.Log) {
	t.Helper()
	if err := s.StoreLogs(logs); err != nil {
		t.Fatalf("StoreLogs(%d-%d): %v", logs[0].Index, logs[len(logs)-1].Index, err)
	}
}

func checkBounds(t testing.TB, s *raftstore.Store, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if f != first || l != last {
		t.Fatalf("bounds [%d, %d], want [%d, %d]", f, l, first, last)
	}
}

func checkEntry(t testing.TB, s *raftstore.Store, want *raft.Log) {
	t.Helper()
	var got raft.Log
	if err := s.GetLog(want.Index, &got); err != nil {
		t.Fatalf("GetLog(%d): %v", want.Index, err)
	}
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("GetLog(%d) = %+v, want %+v", want.Index, got, *want)
	}
}

func checkMissing(t testing.TB, s *raftstore.Store, idx uint64) {
	t.Helper()
	if err := s.GetLog(idx, new(raft.Log)); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog(%d) = %v, want raft.ErrLogNotFound itself", idx, err)
	}
}

func TestImplements(t *testing.T) {
	var s any = openTemp(t)
	if _, ok := s.(raft.LogStore); !ok {
		t.Error("not a raft.LogStore")
	}
	if _, ok := s.(raft.StableStore); !ok {
		t.Error("not a raft.StableStore")
	}
	m, ok := s.(raft.MonotonicLogStore)
	if !ok || !m.IsMonotonic() {
		t.Error("not a monotonic raft.MonotonicLogStore")
	}
}

func TestNewCreatesAndLocks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s := newStore(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatalf("no database created: %v", err)
	}
	if _, err := raftstore.New(dir, nil); !errors.Is(err, shale.ErrLocked) {
		t.Fatalf("second New of an open store: %v, want shale.ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, shale.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.FirstIndex(); !errors.Is(err, shale.ErrClosed) {
		t.Fatalf("FirstIndex after Close: %v", err)
	}
	if err := s.StoreLog(entry(1, "x")); !errors.Is(err, shale.ErrClosed) {
		t.Fatalf("StoreLog after Close: %v", err)
	}
	s = newStore(t, dir) // the lock went with Close
	s.Close()
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t, dir)
	want := entry(1, "log1")
	mustStore(t, s, []*raft.Log{want})
	s.Close()

	ro, err := raftstore.New(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	checkEntry(t, ro, want)
	checkBounds(t, ro, 1, 1)
	if err := ro.StoreLog(entry(2, "log2")); !errors.Is(err, shale.ErrReadOnly) {
		t.Fatalf("StoreLog on a read-only store: %v", err)
	}
	if err := ro.DeleteRange(1, 1); !errors.Is(err, shale.ErrReadOnly) {
		t.Fatalf("DeleteRange on a read-only store: %v", err)
	}
	if err := ro.Set([]byte("k"), nil); !errors.Is(err, shale.ErrReadOnly) {
		t.Fatalf("Set on a read-only store: %v", err)
	}
}

func TestFirstLastIndex(t *testing.T) {
	s := openTemp(t)
	checkBounds(t, s, 0, 0)
	mustStore(t, s, entries(1, 3))
	checkBounds(t, s, 1, 3)
}

func TestGetLog(t *testing.T) {
	s := openTemp(t)
	checkMissing(t, s, 1)
	logs := entries(1, 3)
	mustStore(t, s, logs)
	checkEntry(t, s, logs[1])
	checkMissing(t, s, 0)
	checkMissing(t, s, 4)
}

func TestStoreLogAndLogs(t *testing.T) {
	s := openTemp(t)
	one := entry(1, "log1")
	if err := s.StoreLog(one); err != nil {
		t.Fatal(err)
	}
	checkEntry(t, s, one)
	more := entries(2, 3)
	mustStore(t, s, more)
	for _, l := range more {
		checkEntry(t, s, l)
	}
	if err := s.StoreLogs(nil); err != nil {
		t.Fatalf("StoreLogs(nil): %v", err)
	}
	checkBounds(t, s, 1, 3)
}

func TestDeleteRangePrefix(t *testing.T) {
	s := openTemp(t)
	mustStore(t, s, entries(1, 3))
	if err := s.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	checkMissing(t, s, 1)
	checkMissing(t, s, 2)
	checkEntry(t, s, entry(3, "log3"))
	checkBounds(t, s, 3, 3)
}

func TestSetGet(t *testing.T) {
	s := openTemp(t)
	_, err := s.Get([]byte("bad"))
	if err != raftstore.ErrKeyNotFound || err.Error() != "not found" {
		t.Fatalf("Get of a missing key: %q, want exactly \"not found\"", err)
	}
	k, v := []byte("hello"), []byte("world")
	if err := s.Set(k, v); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(k)
	if err != nil || !bytes.Equal(got, v) {
		t.Fatalf("Get = %q, %v", got, err)
	}
	// Stable keys and log entries live apart: a stable key that looks
	// like a log key changes nothing in the log.
	if err := s.Set([]byte("l\x00\x00\x00\x00\x00\x00\x00\x01"), v); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, 0, 0)
}

func TestSetGetUint64(t *testing.T) {
	s := openTemp(t)
	_, err := s.GetUint64([]byte("bad"))
	if err != raftstore.ErrKeyNotFound || err.Error() != "not found" {
		t.Fatalf("GetUint64 of a missing key: %q", err)
	}
	k := []byte("abc")
	for _, v := range []uint64{123, 0, 1<<64 - 1} {
		if err := s.SetUint64(k, v); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetUint64(k); err != nil || got != v {
			t.Fatalf("GetUint64 = %d, %v, want %d", got, err, v)
		}
	}
	if err := s.Set(k, []byte("short")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64(k); err == nil {
		t.Fatal("GetUint64 of a 5-byte value succeeded")
	}
}
