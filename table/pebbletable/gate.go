package pebbletable

import (
	"context"
	"sync"
)

// opGate counts the calls under way and the scanners open, so that Close
// closes Pebble only once they have ended: Pebble panics on a read or a
// write after its Close, and a caller may still be in one when the process
// shuts down (a remote read that outlived the HTTP server's grace).
type opGate struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // made by close while calls are under way, closed by the last
}

// enter counts a call in, unless the gate is closed.
func (g *opGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

// exit counts a call out.
func (g *opGate) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// isClosed reports whether close was called.
func (g *opGate) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// close refuses new calls and returns a channel closed once none is under
// way, with how many are now; first is false when it was closed already.
func (g *opGate) close() (_ <-chan struct{}, n int, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, 0, false
	}
	g.closed = true
	idle := make(chan struct{})
	if g.n == 0 {
		close(idle)
	} else {
		g.idle = idle
	}
	return idle, g.n, true
}

// enter starts a call on the DB: it fails once the DB is closing, or when
// ctx is done; a nil error must be paired with exit.
func (db *DB) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !db.ops.enter() {
		return errClosed
	}
	return nil
}

// exit ends a call that enter started.
func (db *DB) exit() { db.ops.exit() }
