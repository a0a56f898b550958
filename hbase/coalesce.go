package hbase

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// Group commit of writes. HBase pays per region it touches in a Multi (row
// locks, a WAL append and sync, the memstore), so small batches from many
// concurrent callers (one remote-write request each, its series spread
// over every salt bucket's region) cost it far more as Multis of their own
// than merged. So MutateBatch's parts for a server queue while
// Config.WriteMultisInFlight Multis of mutations are in flight to it; the
// sender of a Multi, once it is answered, takes everything queued for the
// server (within a Multi's bounds) into the next. There is no timer: a
// part goes at once while the server has fewer Multis in flight, and the
// batching comes only from the calls that arrive beyond them, as with a
// group commit of a database log. Several Multis in flight, not one, since
// a region server serves each on a handler of its own, in parallel.
//
// Each part keeps its own call's retries: the sender hands every part what
// became of its actions (done, to retry, failed for good), and the calls
// go on as they would with Multis of their own. A Multi's context ends
// only when every call it carries has given up.

// writeQueues holds, per region server, the parts waiting for a Multi.
type writeQueues struct {
	mu      sync.Mutex
	servers map[string]*writeQueue
}

type writeQueue struct {
	waiting  []*part
	inFlight int // senders running for the server
}

// runShared sends the parts through the write queues and waits for their
// results, or until ctx ends: then the parts still waiting are withdrawn,
// and those in flight are left to land or not, their actions reported as
// failed with ctx's error. It returns only once no sender reads the
// parts' mutations any more, so that the caller may reuse their bytes.
func (c *Client) runShared(ctx context.Context, parts []*part) []partResult {
	for _, p := range parts {
		p.ctx = ctx
		p.built = make(chan struct{})
		p.done = make(chan partResult, 1)
		c.enqueue(p)
	}
	out := make([]partResult, len(parts))
	for k, p := range parts {
		select {
		case out[k] = <-p.done:
			continue
		case <-ctx.Done():
		}
		select {
		case out[k] = <-p.done: // answered meanwhile
		default:
			if !c.withdraw(p) {
				<-p.built // a sender has it: copying takes no I/O
			}
			out[k] = p.abandoned(ctx.Err())
		}
	}
	return out
}

// abandoned is the result of a part whose call gave up waiting: every
// action failed with err.
func (p *part) abandoned(err error) partResult {
	err = fmt.Errorf("multi on %s: %w", p.addr, err)
	res := partResult{failed: make([]actionErr, 0, p.n)}
	for _, run := range p.runs {
		for _, i := range run.actions {
			res.failed = append(res.failed, actionErr{i, err})
		}
	}
	return res
}

// enqueue queues p for its server, and starts a sender unless enough run.
func (c *Client) enqueue(p *part) {
	q := &c.writes
	q.mu.Lock()
	if q.servers == nil {
		q.servers = make(map[string]*writeQueue)
	}
	wq := q.servers[p.addr]
	if wq == nil {
		wq = &writeQueue{}
		q.servers[p.addr] = wq
	}
	wq.waiting = append(wq.waiting, p)
	parts := wq.next(c.cfg.WriteMultisInFlight)
	q.mu.Unlock()
	if parts != nil {
		go c.sender(p.addr, parts)
	}
}

// maxFullMultis bounds the Multis of writes in flight to one server:
// beyond Config.WriteMultisInFlight, a Multi goes only when a full Multi's
// worth waits, since such a queue gains nothing by waiting, and big writes
// (an import) keep the parallelism they had with Multis of their own.
const maxFullMultis = 8

// next takes the parts of a Multi that may go now, with a sender of its
// own, or returns nil; free is how many Multis may be in flight whether
// full or not.
func (wq *writeQueue) next(free int) []*part {
	if len(wq.waiting) == 0 || wq.inFlight >= max(maxFullMultis, free) || (wq.inFlight >= free && !wq.full()) {
		return nil
	}
	wq.inFlight++
	return wq.take()
}

// full says whether the parts waiting fill a Multi.
func (wq *writeQueue) full() bool {
	n, size := 0, 0
	for _, p := range wq.waiting {
		n += p.n
		size += p.size
	}
	return n >= maxMultiActions || size >= maxMultiBytes
}

// withdraw takes p out of its server's queue if it is still there, and
// says whether it was.
func (c *Client) withdraw(p *part) bool {
	q := &c.writes
	q.mu.Lock()
	defer q.mu.Unlock()
	if wq := q.servers[p.addr]; wq != nil {
		for k, w := range wq.waiting {
			if w == p {
				wq.waiting = append(wq.waiting[:k], wq.waiting[k+1:]...)
				return true
			}
		}
	}
	return false
}

// take removes from the queue the parts the next Multi carries: the oldest
// first, then the next ones in order while they fit a Multi's bounds.
func (wq *writeQueue) take() []*part {
	n, size, k := 0, 0, 0
	for ; k < len(wq.waiting); k++ {
		p := wq.waiting[k]
		if k > 0 && (n+p.n > maxMultiActions || size+p.size > maxMultiBytes) {
			break
		}
		n += p.n
		size += p.size
	}
	parts := wq.waiting[:k:k]
	wq.waiting = wq.waiting[k:]
	return parts
}

// sender sends Multis to addr, first of parts, then of whatever queued for
// addr meanwhile, until its queue is empty (starting another sender when a
// full Multi's worth is left waiting). When the server is found down,
// the parts still queued for it go back to their calls at once, to be
// retried where their regions are now.
func (c *Client) sender(addr string, parts []*part) {
	q := &c.writes
	for {
		var lost error
		if parts = dropGivenUp(parts); len(parts) > 0 {
			lost = c.sendShared(parts)
		}
		var down []*part
		q.mu.Lock()
		wq := q.servers[addr]
		if lost != nil {
			down, wq.waiting = wq.waiting, nil
		}
		var more []*part
		if len(wq.waiting) == 0 {
			wq.inFlight--
			if wq.inFlight == 0 {
				delete(q.servers, addr)
			}
			parts = nil
		} else {
			parts = wq.take()
			more = wq.next(c.cfg.WriteMultisInFlight)
		}
		q.mu.Unlock()
		if more != nil {
			go c.sender(addr, more)
		}
		for _, p := range down {
			close(p.built)
			p.done <- partResult{retry: p.all(), err: lost}
		}
		if parts == nil {
			return
		}
	}
}

// sendShared sends one Multi of the parts and hands each its result; it
// returns the error when the server was found down.
func (c *Client) sendShared(parts []*part) (lost error) {
	ch := newChunk(parts)
	for _, p := range parts {
		close(p.built)
	}
	ctx, release := sharedContext(parts)
	res, err := c.sendChunk(ctx, ch)
	release()
	if err != nil && classify(err) == hrpc.ServerDown {
		lost = err
	}
	for k, p := range parts {
		p.done <- res[k]
	}
	return lost
}

// dropGivenUp answers, and leaves out of the next Multi, the parts whose
// call has given up: its context ended, or its deadline passed (a process
// that stalled past it wakes before its contexts' timers have fired). A
// shared Multi goes as long as any call it carries waits, so without this
// it would carry the mutations of one that no longer does, sent after its
// caller's deadline (hbase/region says why that must not be).
func dropGivenUp(parts []*part) []*part {
	return slices.DeleteFunc(parts, func(p *part) bool {
		err := p.ctx.Err()
		if dl, ok := p.ctx.Deadline(); err == nil && ok && !time.Now().Before(dl) {
			err = context.DeadlineExceeded
		}
		if err != nil {
			close(p.built)
			p.done <- p.abandoned(err)
		}
		return err != nil
	})
}

// all is every action of the part.
func (p *part) all() []int {
	out := make([]int, 0, p.n)
	for _, run := range p.runs {
		out = append(out, run.actions...)
	}
	return out
}

// sharedContext is the context of a Multi carrying the parts: it ends when
// the context of every call it carries has ended, since until then some
// call still waits for its answer. The Multi's attempt is bounded by
// Config.RPCTimeout as any other.
func sharedContext(parts []*part) (context.Context, func()) {
	first := parts[0].ctx
	same := true
	for _, p := range parts[1:] {
		same = same && p.ctx == first
	}
	if same {
		return first, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var left atomic.Int32
	left.Store(int32(len(parts)))
	stops := make([]func() bool, len(parts))
	for k, p := range parts {
		stops[k] = context.AfterFunc(p.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// callsPerMultiBounds are the upper bounds of Stats.CallsPerMulti's
// buckets but the last, which is unbounded.
var callsPerMultiBounds = [...]int{1, 2, 4, 8, 16, 32, 64}

// NumCallsPerMultiBuckets is the length of Stats.CallsPerMulti.
const NumCallsPerMultiBuckets = len(callsPerMultiBounds) + 1

// CallsPerMultiBounds returns the upper bounds of Stats.CallsPerMulti's
// buckets but the last, which has none.
func CallsPerMultiBounds() []int { return callsPerMultiBounds[:] }

// noteMulti counts a Multi of MutateBatch's that carried calls calls.
func (c *Client) noteMulti(calls int) {
	b := 0
	for b < len(callsPerMultiBounds) && calls > callsPerMultiBounds[b] {
		b++
	}
	c.callsPerMulti[b].Add(1)
	c.callsInMultis.Add(uint64(calls))
}
