package hbase

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Limits of one Multi call: HBase warns above 5000 rows, and big answers
// delay every other call on the connection.
const (
	maxMultiActions = 4000
	maxMultiBytes   = 4 << 20
)

// BatchError reports the actions of a batch that failed, by position.
// The others succeeded.
type BatchError struct {
	// Errs has one entry per action of the batch, nil where it succeeded.
	Errs   []error
	Failed int
}

func (e *BatchError) Error() string {
	for i, err := range e.Errs {
		if err != nil {
			return fmt.Sprintf("%d of %d actions failed; action %d: %v", e.Failed, len(e.Errs), i, err)
		}
	}
	return fmt.Sprintf("%d of %d actions failed", e.Failed, len(e.Errs))
}

// Unwrap returns the distinct errors, so errors.Is and errors.As see them.
func (e *BatchError) Unwrap() []error {
	var out []error
	seen := map[string]bool{}
	for _, err := range e.Errs {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			out = append(out, err)
			if len(out) == 8 {
				break
			}
		}
	}
	return out
}

// MutateBatch applies mutations of any rows of a table: one Multi per
// region server (several when large), servers in parallel, retrying only
// the actions that failed. A *BatchError names the ones that failed for
// good.
func (c *Client) MutateBatch(ctx context.Context, table string, muts []*hrpc.Mutation) error {
	for _, m := range muts {
		if err := m.Check(); err != nil {
			return err
		}
	}
	sizes := make([]int, len(muts))
	for i, m := range muts {
		sizes[i] = m.CellsSize()
	}
	return c.batch(ctx, table, &batchOps{
		n:   len(muts),
		row: func(i int) []byte { return muts[i].Row },
		add: func(b *hrpc.Multi, region []byte, i int) int {
			b.AddMutation(region, uint32(i), muts[i])
			return sizes[i]
		},
		cellsSize: func(i int) int { return sizes[i] },
	})
}

// GetBatch reads many rows of a table with Multi calls, as MutateBatch
// sends mutations. The answer has one entry per get, nil for a missing row.
func (c *Client) GetBatch(ctx context.Context, table string, gets []*hrpc.Get) ([][]hrpc.Cell, error) {
	pgs := make([]*pb.Get, len(gets))
	for i, g := range gets {
		var err error
		if pgs[i], err = g.Proto(); err != nil {
			return nil, err
		}
	}
	out := make([][]hrpc.Cell, len(gets))
	err := c.batch(ctx, table, &batchOps{
		n:   len(gets),
		row: func(i int) []byte { return gets[i].Row },
		add: func(b *hrpc.Multi, region []byte, i int) int {
			b.AddGet(region, uint32(i), pgs[i])
			return 64 + len(gets[i].Row)
		},
		onResult: func(i int, cells []hrpc.Cell) { out[i] = cells },
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CondPut is one conditional put of CheckAndPutBatch: Put is applied only
// if the cell (Put.Row, Family, Qualifier) holds Expected, or is absent (or
// empty, HBase cannot tell) when Expected is empty.
type CondPut struct {
	Put                         *hrpc.Mutation
	Family, Qualifier, Expected []byte
}

// CheckAndPutBatch applies conditional puts of any rows of a table, each
// as CheckAndPut would, with one Multi per region server: every put is a
// RegionAction of its own with its condition (HBase 2.4 and later), and
// only the actions that failed are retried, as in MutateBatch.
//
// The puts go with ASYNC_WAL durability, and each region's run of them in a
// Multi ends with a barrier (see addBarrier) that syncs the region's WAL:
// a region server handles a Multi's region actions in order, and a WAL sync
// makes every entry appended before it durable, so each put, and each value
// a refused put saw, is durable once the barrier is answered. A conditional
// put that syncs its own WAL entry costs HBase about five times as much (it
// waits for the sync alone), which made new-series bursts slow. When a
// barrier fails, every action of its run is retried: a retry finds what
// the first attempt left (see below).
//
// written[i] is the server's answer to the last attempt of puts[i]. When an
// earlier attempt may have been applied (its answer was lost), the retry
// checks the condition against what that attempt left, so it reports false
// while the put is in place: false means "not written by the attempt that
// answered". On a *BatchError, the failed puts report false and their
// outcome is unknown.
func (c *Client) CheckAndPutBatch(ctx context.Context, table string, puts []CondPut) ([]bool, error) {
	conds := make([]*pb.Condition, len(puts))
	for i, p := range puts {
		if err := p.Put.Check(); err != nil {
			return nil, err
		}
		if p.Put.Type != hrpc.MutationPut {
			return nil, fmt.Errorf("check-and-put batch: action %d is a %v, not a put", i, p.Put.Type)
		}
		var err error
		if conds[i], err = hrpc.ValueCondition(p.Put.Row, p.Family, p.Qualifier, p.Expected); err != nil {
			return nil, err
		}
	}
	written := make([]bool, len(puts))
	err := c.batch(ctx, table, &batchOps{
		n:   len(puts),
		row: func(i int) []byte { return puts[i].Put.Row },
		add: func(b *hrpc.Multi, region []byte, i int) int {
			put := *puts[i].Put
			put.Durability = pb.MutationProto_ASYNC_WAL
			b.AddCondMutation(region, uint32(i), &put, conds[i])
			return puts[i].Put.CellsSize() + 64 + len(puts[i].Expected)
		},
		barrier:     func(b *hrpc.Multi, region []byte, i int) { addBarrier(b, region, puts[i].Family, puts[i].Put.Row) },
		onProcessed: func(i int, processed bool) { written[i] = processed },
	})
	return written, err
}

// barrierQualifier names the column a barrier deletes: no caller's column.
var barrierQualifier = []byte("\x00promhbase.wal-barrier")

// addBarrier adds the unconditional, table-durability mutation that ends a
// region's run of ASYNC_WAL conditional puts: a column delete of a column no
// one writes, in a row of the run. It changes nothing anyone reads (the
// marker only hides cells of its own column, and major compaction drops
// it), yet it is a WAL entry of the region like any other, so answering it
// takes a sync of the WAL past every entry before it. A refused conditional
// put writes nothing and syncs nothing, hence a mutation of its own.
func addBarrier(b *hrpc.Multi, region, family, row []byte) {
	b.AddMutation(region, barrierIndex, &hrpc.Mutation{
		Type: hrpc.MutationDelete, Row: row,
		Cells: []hrpc.MutationCell{{Family: family, Qualifier: barrierQualifier, Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypeDeleteColumn}},
	})
}

// barrierIndex is the action index of a barrier; answers echo it.
const barrierIndex = 1<<32 - 1

// batchOps says what a batch sends and what it does with the answers.
type batchOps struct {
	n   int
	row func(i int) []byte
	// add adds action i for region to the Multi and returns its size.
	add func(b *hrpc.Multi, region []byte, i int) int
	// onResult receives the cells of a successful action (nil: ignored).
	onResult func(i int, cells []hrpc.Cell)
	// onProcessed, when set, makes every action a conditional RegionAction
	// of its own and receives its processed flag.
	onProcessed func(i int, processed bool)
	// cellsSize, when set, is the cell block size of action i, so that a
	// Multi's cell block is allocated once rather than grown by doubling
	// (which allocates about twice the block: the write path's largest
	// buffer).
	cellsSize func(i int) int
	// barrier, when set, adds after each region's run of actions in a
	// Multi (i: the run's last action) a region action whose success makes
	// the run durable; when it fails, the whole run is retried.
	barrier func(b *hrpc.Multi, region []byte, i int)
}

// multiChunk is one Multi call: the region of each of its region actions,
// in order, with the batch positions of that region action's actions.
type multiChunk struct {
	addr    string
	regions []*RegionInfo
	actions [][]int
	// barriers holds, for each barrier region action (see
	// batchOps.barrier), the region actions of the run it ends.
	barriers map[int][]int
	multi    hrpc.Multi
	size     int
}

// batch runs the actions with Multi calls until each succeeded or failed
// for good.
func (c *Client) batch(ctx context.Context, table string, ops *batchOps) error {
	errs := make([]error, ops.n)
	pending := make([]int, ops.n)
	for i := range pending {
		pending[i] = i
	}
	var last error
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt >= c.cfg.MaxAttempts || (attempt > 0 && sleep(ctx, attempt-1, isCallQueueTooBig(last)) != nil) {
			cause := last
			if ctx.Err() != nil {
				cause = errors.Join(ctx.Err(), last)
			}
			for _, i := range pending {
				if errs[i] == nil {
					errs[i] = &RetryError{Attempts: attempt, Err: cause}
				}
			}
			break
		}
		// Group by server and region, in key order within a region.
		byRegion := map[*RegionInfo][]int{}
		var retry []int
		for _, i := range pending {
			r, err := c.locate(ctx, table, ops.row(i))
			if err != nil {
				if ctx.Err() != nil || classify(err) == hrpc.Fatal {
					errs[i] = err
				} else {
					retry = append(retry, i)
					last = err
				}
				continue
			}
			byRegion[r] = append(byRegion[r], i)
		}
		chunks := c.chunks(byRegion, ops)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, ch := range chunks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				again, err := c.runChunk(ctx, ch, errs, ops)
				mu.Lock()
				retry = append(retry, again...)
				if err != nil {
					last = err
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, i := range retry {
			errs[i] = nil
		}
		pending = retry
	}
	be := &BatchError{Errs: errs}
	for _, err := range errs {
		if err != nil {
			be.Failed++
		}
	}
	if be.Failed > 0 {
		return be
	}
	return nil
}

// chunks packs the grouped actions into Multi calls, per server.
func (c *Client) chunks(byRegion map[*RegionInfo][]int, ops *batchOps) []*multiChunk {
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
	left := cellsLeft(regions, byRegion, ops)
	var out []*multiChunk
	var cur *multiChunk
	count := 0
	for _, r := range regions {
		run := -1 // the first region action of r's run in cur
		for _, i := range byRegion[r] {
			if cur == nil || cur.addr != r.Addr || count >= maxMultiActions || cur.size >= maxMultiBytes {
				cur.endRun(ops, r, run)
				cur = &multiChunk{addr: r.Addr}
				cur.multi.Grow(min(left[r.Addr], maxMultiBytes+maxMultiBytes/8))
				out = append(out, cur)
				count, run = 0, -1
			}
			if ops.cellsSize != nil {
				left[r.Addr] -= ops.cellsSize(i)
			}
			if run < 0 {
				run = len(cur.regions)
			}
			cur.add(ops, r, i)
			count++
		}
		cur.endRun(ops, r, run)
	}
	return out
}

// cellsLeft is, per server, the cell block size of the actions for it
// (nil when the batch does not say).
func cellsLeft(regions []*RegionInfo, byRegion map[*RegionInfo][]int, ops *batchOps) map[string]int {
	if ops.cellsSize == nil {
		return nil
	}
	left := map[string]int{}
	for _, r := range regions {
		for _, i := range byRegion[r] {
			left[r.Addr] += ops.cellsSize(i)
		}
	}
	return left
}

// add adds action i of region r.
func (ch *multiChunk) add(ops *batchOps, r *RegionInfo, i int) {
	before := ch.multi.Len()
	ch.size += ops.add(&ch.multi, r.Name, i)
	// Whether the action joined the last region action or opened a new one
	// is the Multi's decision (conditional ones always open one); the chunk
	// mirrors it.
	if ch.multi.Len() > before {
		ch.regions = append(ch.regions, r)
		ch.actions = append(ch.actions, nil)
	}
	k := len(ch.regions) - 1
	ch.actions[k] = append(ch.actions[k], i)
}

// endRun adds the barrier that ends r's run of region actions, from the
// one at index run to the last, when the batch asks for barriers.
func (ch *multiChunk) endRun(ops *batchOps, r *RegionInfo, run int) {
	if ch == nil || ops.barrier == nil || run < 0 || run >= len(ch.regions) {
		return
	}
	last := ch.actions[len(ch.actions)-1]
	covered := make([]int, 0, len(ch.regions)-run)
	for k := run; k < len(ch.regions); k++ {
		covered = append(covered, k)
	}
	ops.barrier(&ch.multi, r.Name, last[len(last)-1])
	if ch.barriers == nil {
		ch.barriers = map[int][]int{}
	}
	ch.barriers[len(ch.regions)] = covered
	ch.regions = append(ch.regions, r)
	ch.actions = append(ch.actions, nil)
}

// runChunk sends one Multi and returns the actions to retry. It records
// final errors in errs.
func (c *Client) runChunk(ctx context.Context, ch *multiChunk, errs []error, ops *batchOps) ([]int, error) {
	conn, err := c.conn(ctx, ch.addr, hrpc.ClientService)
	if err != nil {
		if ctx.Err() != nil {
			ch.fail(errs, err)
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
			ch.fail(errs, fmt.Errorf("multi on %s: %w", ch.addr, err))
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
	return c.chunkResults(ch, call.Response.(*pb.MultiResponse).GetRegionActionResult(), block, errs, ops)
}

// chunkResults handles the answers to a chunk's region actions: it records
// results and final errors and returns the actions to retry and the last
// error seen.
func (c *Client) chunkResults(ch *multiChunk, results []*pb.RegionActionResult, block []byte, errs []error, ops *batchOps) ([]int, error) {
	var retry []int
	var last error
	for k, r := range ch.regions {
		if covered, ok := ch.barriers[k]; ok {
			var err error
			if block, err = c.barrierResult(r, results, k, block); err != nil {
				if errors.Is(err, errCorruptAnswer) {
					ch.fail(errs, fmt.Errorf("multi on %s: %w", ch.addr, err))
					return nil, err
				}
				last = err
				retry = ch.retryRun(covered, retry, errs)
			}
			continue
		}
		if k >= len(results) {
			retry = append(retry, ch.actions[k]...)
			continue
		}
		again, rest, err := c.regionResult(ch.actions[k], r, results[k], block, errs, ops)
		if errors.Is(err, errCorruptAnswer) {
			// Nothing in a corrupt answer can be trusted, and the writes
			// in it may have been applied.
			ch.fail(errs, fmt.Errorf("multi on %s: %w", ch.addr, err))
			return nil, err
		}
		if err != nil {
			last = err
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

// regionResult handles the answer to one region action (actions are its
// batch positions): it records results and final errors and returns the
// actions to retry, the rest of the cell block, and the last error seen.
func (c *Client) regionResult(actions []int, r *RegionInfo, rar *pb.RegionActionResult, block []byte, errs []error, ops *batchOps) ([]int, []byte, error) {
	if x := rar.GetException(); x != nil {
		e := c.regionException(r, x)
		if e.Kind() == hrpc.Fatal {
			for _, i := range actions {
				errs[i] = fmt.Errorf("region %q: %w", r.Name, e)
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
		i := int(roe.GetIndex())
		if ops.onProcessed != nil {
			// A conditional region action holds one action; HBase echoes
			// index 0 for it.
			i = actions[0]
		}
		if i >= len(errs) || answered[i] {
			continue
		}
		answered[i] = true
		if x := roe.GetException(); x != nil {
			e := c.regionException(r, x)
			last = e
			if e.Kind() == hrpc.Fatal {
				errs[i] = fmt.Errorf("action %d in region %q: %w", i, r.Name, e)
				continue
			}
			retry = append(retry, i)
			continue
		}
		if ops.onProcessed != nil {
			if rar.Processed == nil {
				// A server older than 2.4 ignores the condition of a
				// RegionAction and applies the put: say so loudly.
				errs[i] = fmt.Errorf("action %d in region %q: %w", i, r.Name, errNoConditionSupport)
				continue
			}
			ops.onProcessed(i, rar.GetProcessed())
		} else if ops.onResult != nil {
			ops.onResult(i, cells)
		}
	}
	if ops.onProcessed != nil && len(rar.GetResultOrException()) == 0 && rar.Processed != nil {
		// A conditional answer without a per-action entry still carries
		// its outcome.
		ops.onProcessed(actions[0], rar.GetProcessed())
		answered[actions[0]] = true
	}
	for _, i := range actions {
		if !answered[i] {
			retry = append(retry, i)
		}
	}
	return retry, block, last
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
func (ch *multiChunk) retryRun(covered, retry []int, errs []error) []int {
	in := make(map[int]bool, len(retry))
	for _, i := range retry {
		in[i] = true
	}
	for _, k := range covered {
		for _, i := range ch.actions[k] {
			if errs[i] == nil && !in[i] {
				retry = append(retry, i)
				in[i] = true
			}
		}
	}
	return retry
}

func (ch *multiChunk) all() []int {
	var out []int
	for _, a := range ch.actions {
		out = append(out, a...)
	}
	return out
}

func (ch *multiChunk) fail(errs []error, err error) {
	for _, i := range ch.all() {
		errs[i] = err
	}
}
