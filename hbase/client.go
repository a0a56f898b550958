// Package hbase is a native client for HBase 2.x: it finds regions through
// ZooKeeper and hbase:meta, keeps one connection per server and service,
// retries what HBase says can be retried, and offers Get, Put, Delete,
// Increment, CheckAndPut, batched Multi calls, Scan and the admin calls a
// storage backend needs.
//
// When a region server dies or hangs, the client follows the cluster: a
// connection that fails, or on which calls wait while the server sends
// nothing for Config.StallTimeout, is closed with every call on it; the
// regions cached on that server are forgotten, and each call is retried,
// within its context's deadline, where hbase:meta says its region is now
// (and meta's own location is read from ZooKeeper again when meta's server
// is the one gone). An attempt that times out on a server that still
// answers other calls has its region looked up again too. Scanners reopen
// where the region is now, after the last row they returned. Stats counts
// these relocations by Reason.
//
// It owns routing, retries and caching. What goes on the wire is package
// hrpc's, how it travels package region's, the ZooKeeper format package zk's.
// It knows nothing of the data it stores.
package hbase

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
	"github.com/prom-hbase/prom-hbase/hbase/region"
	"github.com/prom-hbase/prom-hbase/hbase/zk"
)

// Exception is the error HBase answered with: the Java class name and the
// server's message. Use errors.As to inspect it.
type Exception = hrpc.Exception

// Config says how to reach a cluster.
type Config struct {
	// ZooKeeper is the comma-separated quorum, host:port each.
	ZooKeeper string
	// ZKRoot is zookeeper.znode.parent ("" means /hbase).
	ZKRoot string
	// RPCTimeout bounds one attempt of one call (0: 30s); the caller's
	// context bounds the whole operation with its retries.
	RPCTimeout time.Duration
	// User is the effective user sent to HBase ("" means root).
	User string
	// MaxAttempts bounds the tries of one operation (0: 35).
	MaxAttempts int
	// StallTimeout closes a connection to a region server on which calls
	// wait while the server sends nothing for this long (0: RPCTimeout,
	// at most 10s; negative: never), so that the calls go to wherever
	// hbase:meta says their regions are by then. A frozen or cut-off
	// server keeps accepting connections and answers nothing; silence is
	// the only sign. Halfway, a cheap high-priority call probes the
	// server, which a live but busy server answers at once.
	StallTimeout time.Duration
	// DisableWriteCoalescing makes every MutateBatch call send Multis of
	// its own. By default concurrent calls share them: a call's mutations
	// for a region server wait while WriteMultisInFlight Multis of
	// mutations are in flight to it, and the next Multi carries the
	// mutations of every call that waited (see MutateBatch).
	DisableWriteCoalescing bool
	// WriteMultisInFlight is how many Multis of writes, full or not, go to
	// one region server at once before further calls' mutations for it
	// wait to share the next (0: DefaultWriteMultisInFlight). Full Multis
	// go beyond it, up to max(8, WriteMultisInFlight).
	WriteMultisInFlight int
}

// DefaultWriteMultisInFlight lets a few requests' Multis run at once on a
// region server, which serves them on handlers of their own, before the
// next ones wait to share a Multi. One at a time (the first coalescing)
// left a region server's other cores idle: on a 2-core machine, 4 writers
// of 200 samples went 19-34 % slower than with Multis of their own, and 16
// writers 14-27 % slower; with 4, both ran as fast as without coalescing
// (BENCHMARKS.md, "Ingest at 200 samples per request: Multis in flight").
// The price: less merging, so more HBase CPU per cell where many writers
// meet many regions (docs/operations.md).
const DefaultWriteMultisInFlight = 4

// Client talks to one HBase cluster. It is safe for concurrent use.
type Client struct {
	cfg   Config
	zk    *zk.Client
	cache regionCache
	// nonceGroup tags this client's nonces, so the server tells retries
	// of our increments from other clients' calls.
	nonceGroup uint64

	relocations [numReasons]atomic.Uint64
	retries     atomic.Uint64
	partials    atomic.Uint64

	writes        writeQueues
	callsPerMulti [NumCallsPerMultiBuckets]atomic.Uint64
	callsInMultis atomic.Uint64

	mu    sync.Mutex
	conns map[connKey]*region.Conn
	dials map[connKey]*dialing
	// silent holds the servers that went silent (a connection closed with
	// region.ErrStalled) and have not answered since: a new connection to
	// one must answer a probe at once before calls are sent on it.
	silent map[string]struct{}
	meta   string // address of the server holding hbase:meta
	master string
	closed bool
}

type connKey struct{ addr, service string }

type dialing struct {
	done chan struct{}
	conn *region.Conn
	err  error
}

// ErrClosed is returned by a closed Client.
var ErrClosed = errors.New("hbase: client closed")

// New returns a client. It connects lazily: the first call finds the
// cluster.
func New(cfg Config) *Client {
	if cfg.RPCTimeout == 0 {
		cfg.RPCTimeout = 30 * time.Second
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 35
	}
	if cfg.StallTimeout == 0 {
		cfg.StallTimeout = min(cfg.RPCTimeout, 10*time.Second)
	}
	if cfg.WriteMultisInFlight <= 0 {
		cfg.WriteMultisInFlight = DefaultWriteMultisInFlight
	}
	return &Client{
		cfg:        cfg,
		zk:         zk.New(cfg.ZooKeeper, cfg.ZKRoot),
		nonceGroup: rand.Uint64() | 1,
		conns:      make(map[connKey]*region.Conn),
		dials:      make(map[connKey]*dialing),
		silent:     make(map[string]struct{}),
	}
}

// Close closes every connection. Calls in flight fail.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	conns := c.conns
	c.conns = make(map[connKey]*region.Conn)
	c.mu.Unlock()
	for _, conn := range conns {
		conn.Close()
	}
	c.zk.Close()
	return nil
}

// conn returns an open connection to addr for service, dialing one when
// there is none. Concurrent callers share one dial.
func (c *Client) conn(ctx context.Context, addr, service string) (*region.Conn, error) {
	key := connKey{addr, service}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if conn := c.conns[key]; conn != nil {
			if conn.Err() == nil {
				c.mu.Unlock()
				return conn, nil
			}
			// A closed connection is never reused.
			delete(c.conns, key)
		}
		if d := c.dials[key]; d != nil {
			c.mu.Unlock()
			select {
			case <-d.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if d.err != nil {
				return nil, d.err
			}
			continue
		}
		d := &dialing{done: make(chan struct{})}
		c.dials[key] = d
		opts := c.connOptions(service)
		if _, ok := c.silent[addr]; ok && opts.Probe != nil {
			opts.Verify = max(c.cfg.StallTimeout/4, 100*time.Millisecond)
		}
		c.mu.Unlock()

		d.conn, d.err = region.Dial(ctx, addr, service, opts)
		c.mu.Lock()
		delete(c.dials, key)
		if d.err == nil && opts.Verify > 0 {
			delete(c.silent, addr) // it answered
		}
		if d.err == nil {
			if c.closed {
				d.conn.Close()
				d.err = ErrClosed
			} else {
				c.conns[key] = d.conn
			}
		}
		c.mu.Unlock()
		close(d.done)
		return d.conn, d.err
	}
}

// connOptions are the options of a new connection for service. Only
// region servers' data connections watch for silence: admin and master
// calls (a flush, a table creation) may take long without any answer, and
// only ClientService has a probe that every region server answers at once.
func (c *Client) connOptions(service string) region.Options {
	opts := region.Options{User: c.cfg.User, DialTimeout: c.cfg.RPCTimeout}
	if service == hrpc.ClientService && c.cfg.StallTimeout > 0 {
		opts.StallTimeout = c.cfg.StallTimeout
		opts.Probe = probeCall
	}
	return opts
}

// probeCall asks for one row of hbase:meta at high priority: the server
// holding meta answers with the row, every other with
// NotServingRegionException; both are answers.
func probeCall() *hrpc.Call {
	call := hrpc.NewGetCall(metaRegionName, &pb.Get{Row: []byte("hbase:namespace"), ExistenceOnly: proto.Bool(true)})
	call.Priority = hrpc.HighPriority
	return call
}

// dropConn forgets a connection that failed and closes it.
func (c *Client) dropConn(conn *region.Conn) { c.failConn(conn, region.ErrClosed) }

// failConn forgets a connection and closes it with cause, which every call
// still waiting on it gets.
func (c *Client) failConn(conn *region.Conn, cause error) {
	key := connKey{conn.Addr(), conn.Service()}
	c.mu.Lock()
	if c.conns[key] == conn {
		delete(c.conns, key)
	}
	c.mu.Unlock()
	conn.Fail(cause)
}

// call makes one attempt of a call on a connection, bounded by RPCTimeout.
func (c *Client) call(ctx context.Context, conn *region.Conn, call *hrpc.Call) ([]byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.RPCTimeout)
	defer cancel()
	start := time.Now()
	cells, err := conn.Call(actx, call)
	if errors.Is(err, region.ErrStalled) {
		c.wentSilent(conn.Addr())
	}
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return cells, err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// The operation's deadline has passed, though its context's timer
		// had not fired yet (a goroutine waking at its deadline, a stalled
		// process): the connection refused to send the call, or dropped it
		// queued, and that says nothing of the server.
		return cells, err
	}
	// The attempt timed out, not the operation.
	if conn.LastRead().Before(start) {
		// Nothing at all came back since the call was sent: the server is
		// gone or frozen. Every call waiting on the connection fails over
		// with this one, and the server's regions are looked up again.
		cause := fmt.Errorf("%w in %v, %s unanswered", region.ErrStalled, c.cfg.RPCTimeout, call.Method)
		c.failConn(conn, cause)
		c.wentSilent(conn.Addr())
		return nil, &region.ConnError{Addr: conn.Addr(), Service: conn.Service(), Err: cause}
	}
	// The server answers other calls: a slow call, not a dead server, so
	// the connection stays. The region may have moved meanwhile (a server
	// closing it answers nothing for it), so its location is read again.
	return nil, &hrpc.Exception{Class: hrpc.CallTimeout,
		Message: fmt.Sprintf("%s to %s: no answer in %v", call.Method, conn.Addr(), c.cfg.RPCTimeout)}
}

// wentSilent notes that the server at addr sent nothing while calls
// waited. Until a new connection to it answers a probe, every dial to it
// must: while hbase:meta still names a frozen server (the master takes
// its ZooKeeper session timeout to notice), each attempt then costs a
// short probe instead of a whole StallTimeout.
func (c *Client) wentSilent(addr string) {
	c.mu.Lock()
	c.silent[addr] = struct{}{}
	// Entries go when their server answers; bound the ones that never do.
	if len(c.silent) > 1024 {
		clear(c.silent)
	}
	c.mu.Unlock()
}

// classify says what to do about an error of one attempt.
func classify(err error) hrpc.Kind {
	var x *hrpc.Exception
	if errors.As(err, &x) {
		// A timed-out attempt is Relocate: like Java's client, look the
		// region up again, since its server may no longer hold it, or be
		// alive at all.
		return x.Kind()
	}
	var ce *region.ConnError
	if errors.As(err, &ce) {
		return hrpc.ServerDown
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// The operation's own end (call turns an attempt's timeout into
		// one of the errors above): nothing to retry, and nothing said of
		// the server. It must be told apart before net.Error, which
		// context.DeadlineExceeded implements: taken for a lost server,
		// it closed a healthy connection and failed every call on it.
		return hrpc.Fatal
	}
	if errors.Is(err, zk.ErrUnavailable) {
		// Where meta or the master is cannot be read now; it will be.
		return hrpc.Backoff
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return hrpc.ServerDown
	}
	return hrpc.Fatal
}

// isCallQueueTooBig needs a longer pause than other back-offs.
func isCallQueueTooBig(err error) bool {
	var x *hrpc.Exception
	return errors.As(err, &x) && x.Class == hrpc.CallQueueTooBig
}

// sleep waits before attempt n (0-based) of a retry: exponential from
// 20 ms to 2 s with jitter, longer when the server's queue is full.
func sleep(ctx context.Context, attempt int, long bool) error {
	d := 20 * time.Millisecond << min(attempt, 7)
	if d > 2*time.Second {
		d = 2 * time.Second
	}
	if long {
		d *= 3
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Reason says why the client stopped trusting a cached location.
type Reason int

// Reasons for a relocation.
const (
	// RegionMoved: the server said the region is not (or no longer) there.
	RegionMoved Reason = iota
	// Timeout: an attempt got no answer in RPCTimeout while the server
	// answered other calls; the region is looked up again.
	Timeout
	// ServerDown: the connection failed, or the server said it stops.
	ServerDown
	// Stalled: the server sent nothing while calls waited; its connection
	// was closed and its regions are looked up again.
	Stalled
	// MetaMoved: hbase:meta's location is read from ZooKeeper again.
	MetaMoved
	numReasons
)

func (r Reason) String() string {
	switch r {
	case RegionMoved:
		return "region_moved"
	case Timeout:
		return "timeout"
	case ServerDown:
		return "server_down"
	case Stalled:
		return "stalled"
	case MetaMoved:
		return "meta_moved"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Reasons lists every Reason, for metrics that want all label values.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// Stats counts what the client went through.
type Stats struct {
	// Retries counts attempts repeated after a retryable error.
	Retries uint64
	// Relocations counts cached locations dropped: regions found
	// elsewhere than cached (moved, split, reopened), attempts timed out,
	// servers lost, meta's server lost.
	Relocations uint64
	// RelocationsBy breaks Relocations down, indexed by Reason.
	RelocationsBy [numReasons]uint64
	// Partials counts scan results that carried part of a row.
	Partials uint64
	// CallsPerMulti counts the Multis of MutateBatch's mutations by how
	// many calls they carried: bucket b those that carried more than
	// CallsPerMultiBounds()[b-1] calls and at most CallsPerMultiBounds()[b]
	// (the last bucket: more than the last bound). Above one when
	// concurrent calls shared Multis.
	CallsPerMulti [NumCallsPerMultiBuckets]uint64
	// CallsInMultis is the sum of the calls those Multis carried.
	CallsInMultis uint64
}

// Stats returns the counters since the client was made.
func (c *Client) Stats() Stats {
	st := Stats{Retries: c.retries.Load(), Partials: c.partials.Load(), CallsInMultis: c.callsInMultis.Load()}
	for b := range st.CallsPerMulti {
		st.CallsPerMulti[b] = c.callsPerMulti[b].Load()
	}
	for i := range st.RelocationsBy {
		st.RelocationsBy[i] = c.relocations[i].Load()
		st.Relocations += st.RelocationsBy[i]
	}
	return st
}

// noteRetry counts a retryable error of kind k. Retries are routine (a
// region moved, a server was busy), so they are logged at debug level only;
// what is given up on comes back to the caller as an error.
func (c *Client) noteRetry(k hrpc.Kind, err error) {
	slog.Debug("hbase: retrying", "kind", k, "err", err)
	c.retries.Add(1)
	if k == hrpc.Relocate || k == hrpc.ServerDown {
		c.relocations[reasonOf(k, err)].Add(1)
	}
}

// reasonOf names why an error of kind Relocate or ServerDown relocates.
func reasonOf(k hrpc.Kind, err error) Reason {
	var x *hrpc.Exception
	switch {
	case errors.Is(err, region.ErrStalled):
		return Stalled
	case k == hrpc.ServerDown:
		return ServerDown
	case errors.As(err, &x) && x.Class == hrpc.CallTimeout:
		return Timeout
	}
	return RegionMoved
}

// forget updates the caches after a retryable error about region r: a
// region not served where cached is looked up again, a server going away
// loses its connection and its regions, a region still opening is looked
// up again after the pause (it may open elsewhere).
func (c *Client) forget(kind hrpc.Kind, r *RegionInfo, conn *region.Conn, err error) {
	if isMeta(r.Table) && (kind == hrpc.Relocate || kind == hrpc.ServerDown) {
		// hbase:meta is found through ZooKeeper, not the region cache.
		if kind == hrpc.ServerDown && conn != nil {
			c.dropConn(conn)
		}
		c.forgetMeta()
		return
	}
	switch kind {
	case hrpc.Relocate:
		c.relocate(r, err)
	case hrpc.ServerDown:
		if conn != nil {
			c.dropConn(conn)
		}
		c.cache.removeServer(r.Addr)
	case hrpc.Backoff:
		var x *hrpc.Exception
		if errors.As(err, &x) && x.Class == hrpc.RegionOpening {
			c.cache.remove(r)
		}
	}
}

// unreachable forgets the server of region r, which could not be dialed:
// hbase:meta's location is read from ZooKeeper again, other regions from
// meta.
func (c *Client) unreachable(r *RegionInfo, err error) {
	slog.Debug("hbase: server unreachable", "addr", r.Addr, "err", err)
	if isMeta(r.Table) {
		c.forgetMeta()
		return
	}
	c.relocations[ServerDown].Add(1)
	c.cache.removeServer(r.Addr)
}

// relocate forgets where region r was. A RegionMovedException names the
// new server: the region is cached there at once, saving a meta lookup.
func (c *Client) relocate(r *RegionInfo, err error) {
	var x *hrpc.Exception
	if errors.As(err, &x) && x.Class == hrpc.RegionMoved && x.Host != "" && x.Port > 0 {
		moved := *r
		moved.Addr = net.JoinHostPort(x.Host, strconv.Itoa(x.Port))
		c.cache.add(&moved)
		return
	}
	c.cache.remove(r)
}

// RetryError wraps the last error of an operation that ran out of
// attempts or time while retrying.
type RetryError struct {
	Attempts int
	Err      error
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("gave up after %d attempts: %v", e.Attempts, e.Err)
}

func (e *RetryError) Unwrap() error { return e.Err }

// onRegion runs a call built for the region holding row, relocating and
// retrying as HBase's answers say. The returned call holds the response.
func (c *Client) onRegion(ctx context.Context, table string, row []byte, build func(r *RegionInfo) (*hrpc.Call, error)) (*hrpc.Call, []byte, error) {
	var last error
	for attempt := 0; attempt < c.cfg.MaxAttempts; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, attempt-1, isCallQueueTooBig(last)); err != nil {
				return nil, nil, &RetryError{Attempts: attempt, Err: errors.Join(err, last)}
			}
		}
		r, err := c.locate(ctx, table, row)
		if err != nil {
			if ctx.Err() != nil || classify(err) == hrpc.Fatal {
				return nil, nil, err
			}
			last = err
			continue
		}
		call, err := build(r)
		if err != nil {
			return nil, nil, err
		}
		conn, err := c.conn(ctx, r.Addr, call.Service)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, err
			}
			c.unreachable(r, err)
			last = err
			continue
		}
		cells, err := c.call(ctx, conn, call)
		if err == nil {
			return call, cells, nil
		}
		if ctx.Err() != nil {
			return nil, nil, errors.Join(ctx.Err(), err)
		}
		last = err
		kind := classify(err)
		if kind != hrpc.Fatal {
			c.noteRetry(kind, err)
		}
		if kind == hrpc.Fatal {
			return nil, nil, fmt.Errorf("%s on %s: %w", call.Method, r.Addr, err)
		}
		c.forget(kind, r, conn, err)
	}
	return nil, nil, &RetryError{Attempts: c.cfg.MaxAttempts, Err: last}
}
