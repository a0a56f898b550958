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
	return c.batch(ctx, table, &batchOps{
		n:   len(muts),
		row: func(i int) []byte { return muts[i].Row },
		add: func(b *hrpc.Multi, region []byte, i int) int {
			b.AddMutation(region, uint32(i), muts[i])
			return muts[i].CellsSize()
		},
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
			b.AddCondMutation(region, uint32(i), puts[i].Put, conds[i])
			return puts[i].Put.CellsSize() + 64 + len(puts[i].Expected)
		},
		onProcessed: func(i int, processed bool) { written[i] = processed },
	})
	return written, err
}

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
}

// multiChunk is one Multi call: the region of each of its region actions,
// in order, with the batch positions of that region action's actions.
type multiChunk struct {
	addr    string
	regions []*RegionInfo
	actions [][]int
	multi   hrpc.Multi
	size    int
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
		chunks := c.chunks(byRegion, ops.add)
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
func (c *Client) chunks(byRegion map[*RegionInfo][]int, add func(b *hrpc.Multi, region []byte, i int) int) []*multiChunk {
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
	var out []*multiChunk
	var cur *multiChunk
	count := 0
	for _, r := range regions {
		for _, i := range byRegion[r] {
			if cur == nil || cur.addr != r.Addr || count >= maxMultiActions || cur.size >= maxMultiBytes {
				cur = &multiChunk{addr: r.Addr}
				out = append(out, cur)
				count = 0
			}
			before := cur.multi.Len()
			cur.size += add(&cur.multi, r.Name, i)
			// Whether the action joined the last region action or opened a
			// new one is the Multi's decision (conditional ones always open
			// one); the chunk mirrors it.
			if cur.multi.Len() > before {
				cur.regions = append(cur.regions, r)
				cur.actions = append(cur.actions, nil)
			}
			k := len(cur.regions) - 1
			cur.actions[k] = append(cur.actions[k], i)
			count++
		}
	}
	return out
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
	results := call.Response.(*pb.MultiResponse).GetRegionActionResult()
	var retry []int
	var last error
	for k, r := range ch.regions {
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
		e := hrpc.FromNameBytes(x)
		if e.Kind() == hrpc.Fatal {
			for _, i := range actions {
				errs[i] = fmt.Errorf("region %q: %w", r.Name, e)
			}
			return nil, block, e
		}
		c.noteRetry(e.Kind(), e)
		c.forget(e.Kind(), r, nil, e)
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
			e := hrpc.FromNameBytes(x)
			last = e
			if e.Kind() == hrpc.Fatal {
				errs[i] = fmt.Errorf("action %d in region %q: %w", i, r.Name, e)
				continue
			}
			c.noteRetry(e.Kind(), e)
			c.forget(e.Kind(), r, nil, e)
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
