package hbase

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// A part is the actions of one batch call bound for one region server that
// fit in one Multi: runs of actions per region, in region order. A Multi
// carries one part, or, for writes, several calls' parts (coalesce.go).
// Nothing in a part changes once it is planned.
type part struct {
	addr string
	ops  *batchOps
	runs []regionRun
	n    int // actions
	size int // bytes, as ops.size counts them

	// For a part queued for a shared Multi: the context of its call; built,
	// closed once the sender has copied the part's mutations into a Multi
	// (or dropped them), after which it reads nothing of its call's; and
	// where its result goes (buffered: the sender never waits for a call
	// that gave up).
	ctx   context.Context
	built chan struct{}
	done  chan partResult
}

// regionRun is actions of one region, in key order.
type regionRun struct {
	r       *RegionInfo
	actions []int
}

// partResult is what became of a part's actions, by batch position: the
// ones to retry (with the last error that asked for it) and the ones that
// failed for good. The others succeeded.
type partResult struct {
	retry  []int
	failed []actionErr
	err    error
}

type actionErr struct {
	i   int
	err error
}

// plan cuts the grouped actions into parts: per server, then per region
// in key order, within the bounds of a Multi.
func plan(byRegion map[*RegionInfo][]int, ops *batchOps) []*part {
	regions := make([]*RegionInfo, 0, len(byRegion))
	for r := range byRegion {
		regions = append(regions, r)
	}
	sort.Slice(regions, func(a, b int) bool {
		if regions[a].Addr != regions[b].Addr {
			return regions[a].Addr < regions[b].Addr
		}
		return string(regions[a].Start) < string(regions[b].Start)
	})
	var out []*part
	var cur *part
	for _, r := range regions {
		for acts := byRegion[r]; len(acts) > 0; {
			if cur == nil || cur.addr != r.Addr || cur.n >= maxMultiActions || cur.size >= maxMultiBytes {
				cur = &part{addr: r.Addr, ops: ops}
				out = append(out, cur)
			}
			j := 0
			for ; j < len(acts) && cur.n < maxMultiActions && cur.size < maxMultiBytes; j++ {
				cur.size += ops.size(acts[j])
				cur.n++
			}
			cur.runs = append(cur.runs, regionRun{r: r, actions: acts[:j:j]})
			acts = acts[j:]
		}
	}
	return out
}

// multiChunk is one Multi call made of parts. Its actions are numbered in
// the order they were added (the index each carries in the Multi and its
// answer); who says whose each one is. Per region action, in order: its
// region and its actions.
type multiChunk struct {
	addr    string
	parts   []*part
	who     []actionRef
	regions []*RegionInfo
	actions [][]int
	// barriers holds, for each barrier region action (see
	// batchOps.barrier), the region actions of the run it ends.
	barriers map[int][]int
	multi    hrpc.Multi
	// errs holds, per action, the error it failed with for good; cause,
	// per region action, the error that made its actions to retry.
	errs  []error
	cause []error
}

// actionRef is action i of part p, in region action k.
type actionRef struct{ p, i, k int }

// newChunk builds the Multi of the parts, all for one server. The runs of
// several parts for one region make one RegionAction.
func newChunk(parts []*part) *multiChunk {
	ch := &multiChunk{addr: parts[0].addr, parts: parts}
	n, cells := 0, 0
	for _, p := range parts {
		n += p.n
		if p.ops.cellBlock {
			cells += p.size
		}
	}
	ch.who = make([]actionRef, 0, n)
	ch.errs = make([]error, n)
	ch.multi.Grow(cells)
	if len(parts) == 1 {
		for _, run := range parts[0].runs {
			ch.addRun(0, run)
		}
	} else {
		type runRef struct {
			p   int
			run regionRun
		}
		var runs []runRef
		for p, pt := range parts {
			for _, run := range pt.runs {
				runs = append(runs, runRef{p, run})
			}
		}
		// Runs of one region side by side (the Multi then puts them in
		// one RegionAction), each call's in the order it came.
		slices.SortStableFunc(runs, func(a, b runRef) int { return strings.Compare(string(a.run.r.Name), string(b.run.r.Name)) })
		for _, rr := range runs {
			ch.addRun(rr.p, rr.run)
		}
	}
	ch.cause = make([]error, len(ch.regions))
	return ch
}

// addRun adds a run of part p's actions, and its barrier if the part's
// batch asks for them.
func (ch *multiChunk) addRun(p int, run regionRun) {
	ops := ch.parts[p].ops
	first := len(ch.regions)
	for _, i := range run.actions {
		g := len(ch.who)
		before := ch.multi.Len()
		ops.add(&ch.multi, run.r.Name, uint32(g), i)
		// Whether the action joined the last region action or opened a new
		// one is the Multi's decision (conditional ones always open one);
		// the chunk mirrors it.
		if ch.multi.Len() > before {
			ch.regions = append(ch.regions, run.r)
			ch.actions = append(ch.actions, nil)
		}
		k := len(ch.regions) - 1
		ch.actions[k] = append(ch.actions[k], g)
		ch.who = append(ch.who, actionRef{p: p, i: i, k: k})
	}
	if ops.barrier != nil && len(run.actions) > 0 {
		ch.endRun(ops, run, first)
	}
}

// endRun adds the barrier that ends a run of region actions, from the one
// at index first to the last.
func (ch *multiChunk) endRun(ops *batchOps, run regionRun, first int) {
	covered := make([]int, 0, len(ch.regions)-first)
	for k := first; k < len(ch.regions); k++ {
		covered = append(covered, k)
	}
	ops.barrier(&ch.multi, run.r.Name, run.actions[len(run.actions)-1])
	if ch.barriers == nil {
		ch.barriers = map[int][]int{}
	}
	ch.barriers[len(ch.regions)] = covered
	ch.regions = append(ch.regions, run.r)
	ch.actions = append(ch.actions, nil)
}

// send sends the part in a Multi of its own and says what became of it.
func (c *Client) send(ctx context.Context, p *part) partResult {
	res, _ := c.sendChunk(ctx, newChunk([]*part{p}))
	return res[0]
}

// sendChunk sends the chunk and says what became of each of its parts.
// err is the error of the Multi as a whole, if it failed.
func (c *Client) sendChunk(ctx context.Context, ch *multiChunk) ([]partResult, error) {
	if ch.parts[0].ops.writes {
		c.noteMulti(len(ch.parts))
	}
	retry, err := c.runChunk(ctx, ch)
	return ch.results(retry, err), err
}

// results splits the outcome of the chunk's actions by part.
func (ch *multiChunk) results(retry []int, err error) []partResult {
	out := make([]partResult, len(ch.parts))
	for g, e := range ch.errs {
		if e != nil {
			ref := ch.who[g]
			out[ref.p].failed = append(out[ref.p].failed, actionErr{ref.i, e})
		}
	}
	for _, g := range retry {
		ref := ch.who[g]
		res := &out[ref.p]
		res.retry = append(res.retry, ref.i)
		if ch.cause[ref.k] != nil {
			res.err = ch.cause[ref.k]
		} else if res.err == nil {
			res.err = err
		}
	}
	return out
}

// runChunk sends one Multi and returns the actions to retry. It records
// final errors in ch.errs.
func (c *Client) runChunk(ctx context.Context, ch *multiChunk) ([]int, error) {
	conn, err := c.conn(ctx, ch.addr, hrpc.ClientService)
	if err != nil {
		if ctx.Err() != nil {
			ch.fail(err)
			return nil, err
		}
		c.cache.removeServer(ch.addr)
		return ch.all(), err
	}
	call := ch.multi.Call(0)
	block, err := c.call(ctx, conn, call)
	if err != nil {
		kind := classify(err)
		if ctx.Err() == nil && kind != hrpc.Fatal {
			c.noteRetry(kind, err)
		}
		switch {
		case ctx.Err() != nil || kind == hrpc.Fatal:
			ch.fail(fmt.Errorf("multi on %s: %w", ch.addr, err))
			return nil, err
		case kind == hrpc.ServerDown:
			c.dropConn(conn)
			c.cache.removeServer(ch.addr)
		case kind == hrpc.Relocate:
			for _, r := range ch.regions {
				c.cache.remove(r)
			}
		}
		return ch.all(), err
	}
	return c.chunkResults(ch, call.Response.(*pb.MultiResponse).GetRegionActionResult(), block)
}

// chunkResults handles the answers to a chunk's region actions: it records
// results and final errors and returns the actions to retry and the last
// error seen.
func (c *Client) chunkResults(ch *multiChunk, results []*pb.RegionActionResult, block []byte) ([]int, error) {
	var retry []int
	var last error
	for k, r := range ch.regions {
		if covered, ok := ch.barriers[k]; ok {
			var err error
			if block, err = c.barrierResult(r, results, k, block); err != nil {
				if errors.Is(err, errCorruptAnswer) {
					ch.fail(fmt.Errorf("multi on %s: %w", ch.addr, err))
					return nil, err
				}
				last = err
				for _, kk := range covered {
					ch.cause[kk] = err
				}
				retry = ch.retryRun(covered, retry)
			}
			continue
		}
		if k >= len(results) {
			retry = append(retry, ch.actions[k]...)
			continue
		}
		again, rest, err := c.regionResult(ch, k, results[k], block)
		if errors.Is(err, errCorruptAnswer) {
			// Nothing in a corrupt answer can be trusted, and the writes
			// in it may have been applied.
			ch.fail(fmt.Errorf("multi on %s: %w", ch.addr, err))
			return nil, err
		}
		if err != nil {
			last = err
			ch.cause[k] = err
		}
		block = rest
		retry = append(retry, again...)
	}
	return retry, last
}

var (
	errCorruptAnswer      = errors.New("corrupt answer")
	errNoConditionSupport = errors.New("the region server answered a conditional RegionAction without its outcome: conditional batches need HBase 2.4 or later")
)

// regionResult handles the answer to region action k: it records results
// and final errors and returns the actions to retry, the rest of the cell
// block, and the last error seen.
func (c *Client) regionResult(ch *multiChunk, k int, rar *pb.RegionActionResult, block []byte) ([]int, []byte, error) {
	r, actions := ch.regions[k], ch.actions[k]
	if x := rar.GetException(); x != nil {
		e := c.regionException(r, x)
		if e.Kind() == hrpc.Fatal {
			for _, g := range actions {
				ch.errs[g] = fmt.Errorf("region %q: %w", r.Name, e)
			}
			return nil, block, e
		}
		return actions, block, e
	}
	var retry []int
	var last error
	answered := make(map[int]bool, len(actions))
	for _, roe := range rar.GetResultOrException() {
		var cells []hrpc.Cell
		if res := roe.GetResult(); res != nil {
			// Cells of results come in the block in answer order.
			var err error
			if cells, block, err = hrpc.ResultCells(nil, res, block); err != nil {
				return nil, nil, fmt.Errorf("%w: %w", errCorruptAnswer, err)
			}
		}
		g := int(roe.GetIndex())
		if ch.conditional(k) {
			// A conditional region action holds one action; HBase echoes
			// index 0 for it.
			g = actions[0]
		}
		if g >= len(ch.errs) || ch.who[g].k != k || answered[g] {
			continue
		}
		answered[g] = true
		if x := roe.GetException(); x != nil {
			e := c.regionException(r, x)
			last = e
			if e.Kind() == hrpc.Fatal {
				ch.errs[g] = fmt.Errorf("action %d in region %q: %w", ch.who[g].i, r.Name, e)
				continue
			}
			retry = append(retry, g)
			continue
		}
		ch.answer(g, rar, cells)
	}
	if ch.conditional(k) && len(rar.GetResultOrException()) == 0 && rar.Processed != nil && len(actions) > 0 {
		// A conditional answer without a per-action entry still carries
		// its outcome.
		ch.answer(actions[0], rar, nil)
		answered[actions[0]] = true
	}
	for _, g := range actions {
		if !answered[g] {
			retry = append(retry, g)
		}
	}
	return retry, block, last
}

// conditional says whether region action k holds a conditional action.
func (ch *multiChunk) conditional(k int) bool {
	as := ch.actions[k]
	return len(as) > 0 && ch.parts[ch.who[as[0]].p].ops.onProcessed != nil
}

// answer hands the successful answer to action g to its batch.
func (ch *multiChunk) answer(g int, rar *pb.RegionActionResult, cells []hrpc.Cell) {
	ref := ch.who[g]
	ops := ch.parts[ref.p].ops
	switch {
	case ops.onProcessed != nil && rar.Processed == nil:
		// A server older than 2.4 ignores the condition of a RegionAction
		// and applies the put: say so loudly.
		ch.errs[g] = fmt.Errorf("action %d in region %q: %w", ref.i, ch.regions[ref.k].Name, errNoConditionSupport)
	case ops.onProcessed != nil:
		ops.onProcessed(ref.i, rar.GetProcessed())
	case ops.onResult != nil:
		ops.onResult(ref.i, cells)
	}
}

// regionException decodes an exception a region server answered for region
// r and, unless it is fatal, counts the retry and drops what the client
// caches that the exception says is stale (the region's location, meta's).
func (c *Client) regionException(r *RegionInfo, x *pb.NameBytesPair) *hrpc.Exception {
	e := hrpc.FromNameBytes(x)
	if e.Kind() != hrpc.Fatal {
		c.noteRetry(e.Kind(), e)
		c.forget(e.Kind(), r, nil, e)
	}
	return e
}

// barrierResult checks the answer to the barrier at region action k and
// returns the rest of the cell block.
func (c *Client) barrierResult(r *RegionInfo, results []*pb.RegionActionResult, k int, block []byte) ([]byte, error) {
	if k >= len(results) {
		return block, fmt.Errorf("region %q: no answer to the WAL barrier", r.Name)
	}
	rar := results[k]
	if x := rar.GetException(); x != nil {
		return block, fmt.Errorf("region %q: WAL barrier: %w", r.Name, c.regionException(r, x))
	}
	roes := rar.GetResultOrException()
	if len(roes) == 0 {
		return block, fmt.Errorf("region %q: no answer to the WAL barrier", r.Name)
	}
	for _, roe := range roes {
		if res := roe.GetResult(); res != nil {
			var err error
			if _, block, err = hrpc.ResultCells(nil, res, block); err != nil {
				return nil, fmt.Errorf("%w: %w", errCorruptAnswer, err)
			}
		}
		if x := roe.GetException(); x != nil {
			return block, fmt.Errorf("region %q: WAL barrier: %w", r.Name, c.regionException(r, x))
		}
	}
	return block, nil
}

// retryRun adds to retry every action of the region actions covered by a
// failed barrier that neither failed for good nor is in retry already:
// whatever they did or saw may not be durable.
func (ch *multiChunk) retryRun(covered, retry []int) []int {
	in := make(map[int]bool, len(retry))
	for _, g := range retry {
		in[g] = true
	}
	for _, k := range covered {
		for _, g := range ch.actions[k] {
			if ch.errs[g] == nil && !in[g] {
				retry = append(retry, g)
				in[g] = true
			}
		}
	}
	return retry
}

// all is every action of the chunk.
func (ch *multiChunk) all() []int {
	out := make([]int, len(ch.who))
	for g := range out {
		out[g] = g
	}
	return out
}

func (ch *multiChunk) fail(err error) {
	for g := range ch.errs {
		ch.errs[g] = err
	}
}
