package shale

import (
	"encoding/binary"
	"sync"

	"github.com/cockroachdb/errors"
)

// Sequence hands out increasing integers from a counter stored under a
// key, as Badger's GetSequence does: it leases bandwidth numbers at a time
// from the stored counter (one Update each), and hands them out from
// memory. Numbers leased and not handed out before a crash are skipped,
// never reused; Release gives back those of an orderly stop. Several
// Sequences on one key, in one process or several, never hand out the
// same number.
//
// A Sequence is safe for concurrent use.
type Sequence struct {
	db        *DB
	key       []byte
	bandwidth uint64

	mu     sync.Mutex
	next   uint64 // the next number to hand out
	leased uint64 // the end of the lease: numbers below it are ours
}

// GetSequence returns a Sequence over the counter stored under key (a
// missing key is a counter at 0), leasing bandwidth numbers at a time. The
// counter is an 8-byte big-endian integer: the next number not yet leased.
func (db *DB) GetSequence(key []byte, bandwidth uint64) (*Sequence, error) {
	if bandwidth == 0 {
		return nil, errors.New("shale: GetSequence with a bandwidth of 0")
	}
	s := &Sequence{db: db, key: append([]byte(nil), key...), bandwidth: bandwidth}
	if err := s.leaseLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

// Next returns the next number of the sequence.
func (s *Sequence) Next() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= s.leased {
		if err := s.leaseLocked(); err != nil {
			return 0, err
		}
	}
	n := s.next
	s.next++
	return n, nil
}

// leaseLocked takes the next bandwidth numbers from the stored counter.
func (s *Sequence) leaseLocked() error {
	return s.db.Update(func(tx *Transaction) error {
		cur, err := s.stored(tx)
		if err != nil {
			return err
		}
		if cur > ^uint64(0)-s.bandwidth {
			return errors.Newf("shale: sequence %q is exhausted at %d", s.key, cur)
		}
		if err := tx.Put(s.key, binary.BigEndian.AppendUint64(nil, cur+s.bandwidth)); err != nil {
			return err
		}
		s.next, s.leased = cur, cur+s.bandwidth
		return nil
	})
}

func (s *Sequence) stored(tx *Transaction) (uint64, error) {
	v, err := tx.Get(s.key)
	switch {
	case errors.Is(err, ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	case len(v) != 8:
		return 0, errors.Newf("shale: sequence key %q holds %d bytes, not an 8-byte counter", s.key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Release gives the numbers leased and not handed out back to the stored
// counter, if no other Sequence leased after this one. Next after Release
// leases again.
func (s *Sequence) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.db.Update(func(tx *Transaction) error {
		cur, err := s.stored(tx)
		if err != nil || cur != s.leased {
			return err // someone leased after us: the gap stays
		}
		return tx.Put(s.key, binary.BigEndian.AppendUint64(nil, s.next))
	})
	s.leased = s.next
	return err
}
