package region

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// ConnError reports that the connection failed or was closed; the call may
// or may not have reached the server.
type ConnError struct {
	Addr    string
	Service string
	Err     error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("connection to %s (%s): %v", e.Addr, e.Service, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

// ErrClosed is the cause of a ConnError after Close.
var ErrClosed = errors.New("connection closed")

// ErrStalled is the cause of a ConnError on a connection closed because
// calls waited on it and the server sent nothing for Options.StallTimeout.
var ErrStalled = errors.New("server sent nothing")

// Options tune a connection.
type Options struct {
	// User is the effective user SIMPLE authentication trusts.
	User string
	// DialTimeout bounds the TCP connect (0: 10s, or the context's deadline).
	DialTimeout time.Duration
	// StallTimeout closes a connection on which calls wait while the server
	// sends nothing at all for this long, failing every call in flight, so
	// they go elsewhere. A frozen or cut-off server keeps its TCP
	// connections open and answers nothing; only silence tells. 0 disables.
	StallTimeout time.Duration
	// Probe, when set with StallTimeout, builds a cheap call that is sent
	// when the connection has been silent for half of StallTimeout: a live
	// server that is merely slow with the calls waiting answers it at once
	// (HBase serves high-priority calls from their own handlers), and the
	// connection is not closed.
	Probe func() *hrpc.Call
	// Verify, when set with Probe, makes Dial send the probe and wait for
	// an answer, any answer, for this long before it returns the
	// connection: for a server that went silent before, whose kernel
	// still completes TCP handshakes while the process answers nothing.
	// No answer in time fails the dial with ErrStalled.
	Verify time.Duration
}

// Conn is a connection to one server for one service. Many goroutines may
// call at once: one writer goroutine sends requests in the order they
// arrive, one reader goroutine hands answers back by call id.
type Conn struct {
	addr, service string
	nc            net.Conn
	queue         chan *pending
	done          chan struct{}

	// lastRead is when the last frame arrived (or the connection opened),
	// in UnixNano.
	lastRead atomic.Int64

	mu      sync.Mutex
	pending map[uint32]*pending
	nextID  uint32
	err     error // why the connection closed; set once
}

type pending struct {
	id       uint32
	call     *hrpc.Call
	deadline time.Time  // the caller's, zero if none
	sent     int64      // UnixNano when the call was queued
	reply    chan reply // buffered: the reader never blocks on a caller
}

type reply struct {
	resp *Response
	err  error
}

// Dial connects to addr and sends the preamble and connection header.
// Servers answer a good header with silence, so the connection is usable
// at once; a bad one is answered with an error and a close, which the first
// calls see.
func Dial(ctx context.Context, addr, service string, opts Options) (*Conn, error) {
	timeout := opts.DialTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &ConnError{Addr: addr, Service: service, Err: err}
	}
	user := opts.User
	if user == "" {
		user = "root"
	}
	hdr, err := AppendConnectionHeader(nil, service, user)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetWriteDeadline(dl)
	}
	if _, err := nc.Write(hdr); err != nil {
		nc.Close()
		return nil, &ConnError{Addr: addr, Service: service, Err: fmt.Errorf("send connection header: %w", err)}
	}
	_ = nc.SetWriteDeadline(time.Time{})
	c := &Conn{
		addr: addr, service: service, nc: nc,
		queue:   make(chan *pending, 256),
		done:    make(chan struct{}),
		pending: make(map[uint32]*pending),
	}
	c.lastRead.Store(time.Now().UnixNano())
	go c.writeLoop()
	go c.readLoop()
	if opts.StallTimeout > 0 {
		go c.watch(opts.StallTimeout, opts.Probe)
	}
	if opts.Verify > 0 && opts.Probe != nil {
		if err := c.verify(ctx, opts.Probe(), opts.Verify); err != nil {
			c.fail(err)
			return nil, &ConnError{Addr: addr, Service: service, Err: err}
		}
	}
	return c, nil
}

// verify sends a probe and waits until the server answers it. An answer
// that is an exception still proves the server alive.
func (c *Conn) verify(ctx context.Context, probe *hrpc.Call, timeout time.Duration) error {
	vctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := c.Call(vctx, probe)
	var x *hrpc.Exception
	switch {
	case err == nil || errors.As(err, &x):
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: no answer to a probe in %v", ErrStalled, timeout)
	}
	return err
}

// LastRead is when the server last sent anything on the connection (the
// time it was opened if nothing yet).
func (c *Conn) LastRead() time.Time { return time.Unix(0, c.lastRead.Load()) }

// oldestWaiting returns when the longest-waiting call in flight was queued.
func (c *Conn) oldestWaiting() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var oldest int64
	for _, p := range c.pending {
		if oldest == 0 || p.sent < oldest {
			oldest = p.sent
		}
	}
	return oldest, oldest != 0
}

// watch closes the connection when calls wait and the server has sent
// nothing for stall: not since the oldest of them was queued, nor since
// the last frame. At half that silence it sends a probe, if there is one,
// and closes only if the probe was out for at least a quarter of stall.
func (c *Conn) watch(stall time.Duration, probe func() *hrpc.Call) {
	t := time.NewTicker(max(stall/8, time.Millisecond))
	defer t.Stop()
	var probed int64 // when the probe in flight was sent, 0 if none
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		oldest, waiting := c.oldestWaiting()
		now := time.Now().UnixNano()
		quiet := time.Duration(now - max(c.lastRead.Load(), oldest))
		if !waiting || quiet < stall/2 {
			probed = 0
			continue
		}
		if probe != nil && probed == 0 {
			probed = now
			go c.sendProbe(probe(), stall)
			continue
		}
		if quiet >= stall && (probe == nil || time.Duration(now-probed) >= stall/4) {
			c.fail(fmt.Errorf("%w for %v while calls waited", ErrStalled, quiet.Round(time.Millisecond)))
			return
		}
	}
}

// sendProbe sends a probe; its answer, any answer, updates lastRead.
func (c *Conn) sendProbe(call *hrpc.Call, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, _ = c.Call(ctx, call)
}

// Addr is the server's address.
func (c *Conn) Addr() string { return c.addr }

// Service is the service the connection speaks.
func (c *Conn) Service() string { return c.service }

// Done is closed when the connection has failed or was closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection closed, nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection and fails the calls in flight.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	return nil
}

// Fail closes the connection with cause as the reason that the calls in
// flight, and later ones, get (wrapped in a ConnError).
func (c *Conn) Fail(cause error) {
	c.fail(cause)
}

// fail closes the connection once, with err as the reason.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = &ConnError{Addr: c.addr, Service: c.service, Err: err}
	calls := c.pending
	c.pending = nil
	c.mu.Unlock()
	close(c.done)
	c.nc.Close()
	for _, p := range calls {
		p.reply <- reply{err: c.err}
	}
}

// Call sends the call and waits for its answer, at most until ctx ends.
// On success the call's Response is filled in and the cell block of the
// answer is returned; it is the caller's, no one else refers to it. A
// server exception is returned as *hrpc.Exception, a connection failure as
// *ConnError.
func (c *Conn) Call(ctx context.Context, call *hrpc.Call) ([]byte, error) {
	p := &pending{call: call, sent: time.Now().UnixNano(), reply: make(chan reply, 1)}
	if dl, ok := ctx.Deadline(); ok {
		if time.Until(dl) <= 0 {
			return nil, context.DeadlineExceeded
		}
		p.deadline = dl
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	// Java keeps call ids in 0..2^31-1; so do we, wrapping.
	p.id = c.nextID
	c.nextID = (c.nextID + 1) & (1<<31 - 1)
	c.pending[p.id] = p
	c.mu.Unlock()

	select {
	case c.queue <- p:
	case <-c.done:
		// fail() answers every pending call, this one included.
	case <-ctx.Done():
		c.forget(p.id)
		return nil, ctx.Err()
	}
	select {
	case r := <-p.reply:
		if r.err != nil {
			return nil, r.err
		}
		if x := r.resp.Header.Exception; x != nil {
			return nil, hrpc.FromResponse(x)
		}
		if err := unmarshalResult(r.resp.Message, call.Response); err != nil {
			return nil, fmt.Errorf("%s: decode %s response: %w", c.addr, call.Method, err)
		}
		return r.resp.Cells, nil
	case <-ctx.Done():
		c.forget(p.id)
		return nil, ctx.Err()
	}
}

// forget drops a call whose caller gave up; a late answer is discarded.
func (c *Conn) forget(id uint32) {
	c.mu.Lock()
	if c.pending != nil {
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

func (c *Conn) writeLoop() {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	for {
		var p *pending
		select {
		case p = <-c.queue:
		case <-c.done:
			return
		}
		var err error
		if buf, err = c.write(w, buf, p); err != nil {
			c.fail(fmt.Errorf("write: %w", err))
			return
		}
		// Flush when no other request is waiting: calls that arrive
		// together leave in one write. Also after a call not sent, which
		// may follow one that was.
		if len(c.queue) == 0 && w.Buffered() > 0 {
			if err := w.Flush(); err != nil {
				c.fail(fmt.Errorf("write: %w", err))
				return
			}
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
}

// write encodes p into buf and writes it to w, unless it is no longer
// wanted (stillWanted) or cannot be encoded, which fails it alone. It
// returns buf for reuse, and an error only when w failed.
func (c *Conn) write(w *bufio.Writer, buf []byte, p *pending) ([]byte, error) {
	timeout, ok := c.stillWanted(p)
	if !ok {
		return buf, nil
	}
	if hook := beforeWrite.Load(); hook != nil {
		(*hook)(p.call)
	}
	buf, err := AppendRequest(buf[:0], p.id, p.call, timeout)
	if err != nil {
		if c.take(p.id) != nil {
			p.reply <- reply{err: err}
		}
		return buf, nil
	}
	_, err = w.Write(buf)
	return buf, err
}

// stillWanted says whether the writer is to send p, and with what timeout
// in ms for the server (0: none). A call whose caller gave up, or whose
// deadline passed while it waited in the queue, is not sent: the server
// would work for no one, and a mutation written after its caller's
// deadline could land after the caller had acted on its failure (a
// compactor whose lease another took over once this process stalled: its
// chunk put must not land on top of the other's). The caller's own check
// of the deadline, in Call, comes before the queue; this one is the last
// before the socket. The timeout is what is left of the deadline now.
func (c *Conn) stillWanted(p *pending) (uint32, bool) {
	if p.deadline.IsZero() {
		return 0, c.waiting(p.id)
	}
	ms := time.Until(p.deadline).Milliseconds()
	if ms <= 0 {
		if c.take(p.id) != nil {
			p.reply <- reply{err: fmt.Errorf("%s: %s not sent: %w", c.addr, p.call.Method, context.DeadlineExceeded)}
		}
		return 0, false
	}
	return uint32(min(ms, 1<<31)), c.waiting(p.id)
}

// take removes call id from pending and returns it, nil when it is not
// there (its caller gave up, or fail answered it). Whoever takes a call
// answers it, exactly once.
func (c *Conn) take(id uint32) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[id]
	if p != nil {
		delete(c.pending, id)
	}
	return p
}

// waiting reports whether call id's caller still waits for it.
func (c *Conn) waiting(id uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	return ok
}

// beforeWrite, when set (by tests), is called by the writer with each call
// it is about to send, after stillWanted: a writer held there is one whose
// process stalled at the last moment.
var beforeWrite atomic.Pointer[func(*hrpc.Call)]

func (c *Conn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var lenBuf [4]byte
	for {
		if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
			c.fail(fmt.Errorf("read: %w", err))
			return
		}
		// Any sign of life counts, before a large frame is read whole.
		c.lastRead.Store(time.Now().UnixNano())
		n := binary.BigEndian.Uint32(lenBuf[:])
		if n > MaxFrame {
			c.fail(fmt.Errorf("%w: response frame of %d bytes", ErrFrame, n))
			return
		}
		// A fresh buffer per frame: the caller keeps the cell block.
		frame := make([]byte, n)
		if _, err := io.ReadFull(r, frame); err != nil {
			c.fail(fmt.Errorf("read: %w", err))
			return
		}
		rep := reply{resp: new(Response)}
		if err := ParseResponse(frame, rep.resp); err != nil {
			c.fail(err)
			return
		}
		id := rep.resp.Header.GetCallId()
		p := c.take(id)
		if p == nil {
			if x := rep.resp.Header.Exception; x != nil && (rep.resp.Header.CallId == nil || id == 1<<32-1) {
				// A fatal connection-level error (bad header, auth...).
				c.fail(hrpc.FromResponse(x))
				return
			}
			continue // an answer nobody waits for anymore
		}
		p.reply <- rep
	}
}
