package main

import (
	"bufio"
	"encoding/binary"
	"io"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

// Keys of the FSM's database: 'd' + user key holds the user's value;
// appliedKey holds the index of the last log entry applied, 8 bytes
// big-endian, written in the same batch as the entry's change.
var (
	dataPrefix = []byte{'d'}
	appliedKey = []byte{'a'}
)

func dataKey(k []byte) []byte { return append([]byte{'d'}, k...) }

// Command operations, the first byte of a raft log entry's Data.
const (
	opPut    = 1
	opDelete = 2
)

// encodeCommand encodes a put (value non-nil) or a delete of key:
// op byte, uvarint key length, key, value.
func encodeCommand(op byte, key, value []byte) []byte {
	b := binary.AppendUvarint([]byte{op}, uint64(len(key)))
	return append(append(b, key...), value...)
}

func decodeCommand(b []byte) (op byte, key, value []byte, err error) {
	if len(b) < 2 {
		return 0, nil, nil, errors.New("kv: short command")
	}
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n > uint64(len(b)-1-w) {
		return 0, nil, nil, errors.New("kv: malformed command")
	}
	rest := b[1+w:]
	return b[0], rest[:n], rest[n:], nil
}

// kvFSM is the replicated state machine: a shale database of keys and
// values. Raft calls Apply, Snapshot and Restore from one goroutine; reads
// (get, dump) may run at the same time.
type kvFSM struct {
	db *shale.DB
	// applied is the index of the last entry applied; only the FSM
	// goroutine writes it after opening, others read it.
	applied atomic.Uint64
}

func openFSM(dir string) (*kvFSM, error) {
	db, err := shale.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	f := &kvFSM{db: db}
	v, err := db.Get(appliedKey)
	switch {
	case errors.Is(err, shale.ErrNotFound):
	case err != nil:
		db.Close()
		return nil, err
	default:
		f.applied.Store(binary.BigEndian.Uint64(v))
	}
	return f, nil
}

// Apply applies one committed entry. An entry at or below the applied
// index is one the database already holds (raft replays the log after the
// last snapshot when a node restarts): it is skipped, so the state never
// steps back. The entry's change and the new applied index are one batch.
func (f *kvFSM) Apply(l *raft.Log) any {
	if l.Index <= f.applied.Load() {
		return nil
	}
	var b shale.Batch
	b.Put(appliedKey, binary.BigEndian.AppendUint64(nil, l.Index))
	op, key, value, err := decodeCommand(l.Data)
	if err == nil {
		switch op {
		case opPut:
			b.Put(dataKey(key), value)
		case opDelete:
			b.Delete(dataKey(key))
		default:
			err = errors.Newf("kv: unknown operation %d", op)
		}
	}
	// A bad command is still applied (as nothing) on every node alike;
	// a failed write is not something every node shares, so it stops
	// this one: raft replays the entry when it restarts.
	if werr := f.db.Write(&b, shale.NoSync); werr != nil {
		panic(errors.Wrapf(werr, "kv: apply entry %d", l.Index))
	}
	f.applied.Store(l.Index)
	return err
}

// Snapshot pins a shale snapshot of the database. It first makes the
// database durable up to the applied index (one Sync write), so the state
// on disk is never behind a snapshot raft may cut its log to.
func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	applied := f.applied.Load()
	if err := f.db.Put(appliedKey, binary.BigEndian.AppendUint64(nil, applied), shale.Sync); err != nil {
		return nil, err
	}
	return &kvSnapshot{snap: f.db.NewSnapshot(), applied: applied}, nil
}

// Snapshot stream: the applied index, 8 bytes big-endian, then for each
// key in order: uvarint key length, key, uvarint value length, value.
type kvSnapshot struct {
	snap    *shale.Snapshot
	applied uint64
}

// Persist streams the snapshot's keys and values to the sink.
func (s *kvSnapshot) Persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriter(sink)
	err := s.write(w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return errors.CombineErrors(err, sink.Cancel())
	}
	return sink.Close()
}

func (s *kvSnapshot) write(w *bufio.Writer) error {
	if _, err := w.Write(binary.BigEndian.AppendUint64(nil, s.applied)); err != nil {
		return err
	}
	var hdr []byte
	for e, err := range s.snap.All(shale.PrefixOptions(dataPrefix)) {
		if err != nil {
			return err
		}
		k := e.Key[len(dataPrefix):]
		hdr = binary.AppendUvarint(hdr[:0], uint64(len(k)))
		hdr = append(hdr, k...)
		hdr = binary.AppendUvarint(hdr, uint64(len(e.Value)))
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		if _, err := w.Write(e.Value); err != nil {
			return err
		}
	}
	return nil
}

// Release closes the shale snapshot.
func (s *kvSnapshot) Release() { s.snap.Close() }

// restoreBatch bounds the entries of one batch while restoring.
const restoreBatch = 4096

// Restore replaces the database's contents with the snapshot's. It first
// deletes the applied index, so a crash midway leaves a state that
// claims nothing (applied 0) and the node restores again when it starts
// (see startNode); the last batch writes the snapshot's index, Sync.
func (f *kvFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r := bufio.NewReader(rc)
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return errors.Wrap(err, "kv: snapshot header")
	}
	if err := f.db.Delete(appliedKey, shale.Sync); err != nil {
		return err
	}
	f.applied.Store(0)
	if err := f.clear(); err != nil {
		return err
	}
	var b shale.Batch
	for {
		k, v, err := readPair(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			return errors.Wrap(err, "kv: snapshot")
		}
		b.Put(dataKey(k), v)
		if b.Len() >= restoreBatch {
			if err := f.db.Write(&b, shale.NoSync); err != nil {
				return err
			}
			b.Reset()
		}
	}
	applied := binary.BigEndian.Uint64(hdr[:])
	b.Put(appliedKey, hdr[:])
	if err := f.db.Write(&b, shale.Sync); err != nil {
		return err
	}
	f.applied.Store(applied)
	return nil
}

// clear deletes every user key.
func (f *kvFSM) clear() error {
	var b shale.Batch
	for e, err := range f.db.All(shale.PrefixOptions(dataPrefix)) {
		if err != nil {
			return err
		}
		b.Delete(e.Key)
		if b.Len() >= restoreBatch {
			if err := f.db.Write(&b, shale.NoSync); err != nil {
				return err
			}
			b.Reset()
		}
	}
	return f.db.Write(&b, shale.NoSync)
}

// maxSnapshotField bounds a key or value read from a snapshot stream.
const maxSnapshotField = 1 << 30

func readPair(r *bufio.Reader) (k, v []byte, err error) {
	kn, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, nil, err // io.EOF here is the clean end
	}
	if kn > maxSnapshotField {
		return nil, nil, errors.Newf("key of %d bytes", kn)
	}
	k = make([]byte, kn)
	if _, err := io.ReadFull(r, k); err != nil {
		return nil, nil, errors.Wrap(noEOF(err), "key")
	}
	vn, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, nil, errors.Wrap(noEOF(err), "value length")
	}
	if vn > maxSnapshotField {
		return nil, nil, errors.Newf("value of %d bytes", vn)
	}
	v = make([]byte, vn)
	if _, err := io.ReadFull(r, v); err != nil {
		return nil, nil, errors.Wrap(noEOF(err), "value")
	}
	return k, v, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
