package pebbletable

import (
	"hash/maphash"
	"math/bits"
	"sync"
)

// rowLocks stripes row locks over a fixed set of RWMutexes. Put and Delete
// take their rows' stripes shared, so concurrent writes still meet in
// Pebble's group commit; Increment, CheckAndPut and the sweeper, which read
// before they write, take them exclusive. Several stripes are always taken in
// ascending order, which rules out deadlock.
type rowLocks struct {
	seed    maphash.Seed
	stripes [lockStripes]struct {
		sync.RWMutex
		_ [64 - 24]byte // one stripe per cache line
	}
}

const lockStripes = 64

type stripeSet uint64

func (l *rowLocks) init() { l.seed = maphash.MakeSeed() }

func (l *rowLocks) stripe(tableID uint32, row []byte) stripeSet {
	h := maphash.Bytes(l.seed, row) ^ uint64(tableID)*0x9E3779B97F4A7C15
	return 1 << (h % lockStripes)
}

func (l *rowLocks) rlock(s stripeSet) {
	for m := s; m != 0; m &= m - 1 {
		l.stripes[bits.TrailingZeros64(uint64(m))].RLock()
	}
}

func (l *rowLocks) runlock(s stripeSet) {
	for m := s; m != 0; m &= m - 1 {
		l.stripes[bits.TrailingZeros64(uint64(m))].RUnlock()
	}
}

func (l *rowLocks) lock(s stripeSet) {
	for m := s; m != 0; m &= m - 1 {
		l.stripes[bits.TrailingZeros64(uint64(m))].Lock()
	}
}

func (l *rowLocks) unlock(s stripeSet) {
	for m := s; m != 0; m &= m - 1 {
		l.stripes[bits.TrailingZeros64(uint64(m))].Unlock()
	}
}
