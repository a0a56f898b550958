package store

import (
	"sync/atomic"
	"time"
)

// readState is the read path's state that lives as long as its Store: the
// cache of metric names and tag keys, and the early read's settings
// (earlyread.go).
type readState struct {
	names *nameCache

	// markWindow: an early read is kept only if the query's marks were
	// read within it of the read's send (half of markDelay).
	markWindow time.Duration
	// earlyRereads counts early reads read again because the marks took
	// longer than markWindow.
	earlyRereads atomic.Int64
	// oldMarked: the last query whose marks came in had marks on hours
	// older than earlyReadMinAge. Its early read of them was read again;
	// reads go in order until a query's marks cover no such hour.
	oldMarked atomic.Bool
	// marks shares a read of the compaction table's marks among the
	// queries that want one at the same time (marksshare.go).
	marks marksShare
	// Test hooks: run before a query's marks are read, and after the early
	// read of a task.
	beforeMarks, afterEarlyRead func()
	// alwaysEarly (tests): read early even when the marks are in already,
	// as they often are on Pebble, so that tests take the early path.
	alwaysEarly bool
}

func (s *Store) readState() *readState { return &s.read }
