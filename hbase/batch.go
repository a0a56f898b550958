package hbase

import (
	"context"
	"errors"
	"fmt"
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
//
// Concurrent calls share Multis (unless Config.DisableWriteCoalescing): a
// call's mutations for a server wait while Config.WriteMultisInFlight Multis
// of mutations are in flight to it, and the next Multi carries those of
// every call that waited, one RegionAction per region holding all of them
// (see coalesce.go). A call returns once every one of its own mutations is
// acknowledged, or with the errors of its own that failed. One whose
// context ends returns at once; its mutations already on their way may
// still be applied, which only ever happens to a call that reports an
// error, and which a retry of it makes no worse: a put or delete of a cell
// at a given timestamp applied twice is applied once.
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
		n:         len(muts),
		row:       func(i int) []byte { return muts[i].Row },
		size:      func(i int) int { return sizes[i] },
		cellBlock: true,
		add: func(b *hrpc.Multi, region []byte, index uint32, i int) {
			b.AddMutation(region, index, muts[i])
		},
		writes: true,
	})
}

// GetBatch reads many rows of a table with Multi calls, as MutateBatch
// sends mutations (but never in another call's Multi). The answer has one
// entry per get, nil for a missing row.
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
		n:    len(gets),
		row:  func(i int) []byte { return gets[i].Row },
		size: func(i int) int { return 64 + len(gets[i].Row) },
		add: func(b *hrpc.Multi, region []byte, index uint32, i int) {
			b.AddGet(region, index, pgs[i])
		},
		onResult: func(i int, cells []hrpc.Cell) { out[i] = cells },
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CondMutation is one conditional mutation of CheckAndMutateBatch: the
// put or delete Mutation is applied only if the cell (Mutation.Row, Family,
// Qualifier) holds Expected, or is absent (or empty, HBase cannot tell)
// when Expected is empty.
type CondMutation struct {
	Mutation                    *hrpc.Mutation
	Family, Qualifier, Expected []byte
}

// CheckAndMutateBatch applies conditional puts and deletes of any rows of
// a table, each as CheckAndPut would, with one Multi per region server:
// every mutation is a RegionAction of its own with its condition (HBase
// 2.4 and later), and only the actions that failed are retried, as in
// MutateBatch.
//
// The mutations go with ASYNC_WAL durability, and each region's run of
// them in a Multi ends with a barrier (see addBarrier) that syncs the
// region's WAL: a region server handles a Multi's region actions in order,
// and a WAL sync makes every entry appended before it durable, so each
// mutation, and each value a refused one saw, is durable once the barrier
// is answered. A conditional put that syncs its own WAL entry costs HBase
// about five times as much (it waits for the sync alone), which made
// new-series bursts slow. When a barrier fails, every action of its run is
// retried: a retry finds what the first attempt left (see below).
//
// written[i] is the server's answer to the last attempt of muts[i]. When an
// earlier attempt may have been applied (its answer was lost), the retry
// checks the condition against what that attempt left, so it reports false
// while a put is in place: false means "not written by the attempt that
// answered". On a *BatchError, the failed mutations report false and their
// outcome is unknown.
func (c *Client) CheckAndMutateBatch(ctx context.Context, table string, muts []CondMutation) ([]bool, error) {
	for i, m := range muts {
		if err := m.Mutation.Check(); err != nil {
			return nil, err
		}
		if m.Mutation.Type != hrpc.MutationPut && m.Mutation.Type != hrpc.MutationDelete {
			return nil, fmt.Errorf("check-and-mutate batch: action %d is a %v, not a put or a delete", i, m.Mutation.Type)
		}
	}
	written := make([]bool, len(muts))
	ops, err := condBatchOps(muts, written)
	if err != nil {
		return nil, err
	}
	return written, c.batch(ctx, table, ops)
}

// condBatchOps is what CheckAndMutateBatch asks of a batch: each mutation
// a conditional RegionAction, ASYNC_WAL, each region's run ended by a
// barrier; outcomes go to written.
func condBatchOps(muts []CondMutation, written []bool) (*batchOps, error) {
	conds := make([]*pb.Condition, len(muts))
	for i, m := range muts {
		var err error
		if conds[i], err = hrpc.ValueCondition(m.Mutation.Row, m.Family, m.Qualifier, m.Expected); err != nil {
			return nil, err
		}
	}
	return &batchOps{
		n:    len(muts),
		row:  func(i int) []byte { return muts[i].Mutation.Row },
		size: func(i int) int { return muts[i].Mutation.CellsSize() + 64 + len(muts[i].Expected) },
		add: func(b *hrpc.Multi, region []byte, index uint32, i int) {
			m := *muts[i].Mutation
			m.Durability = pb.MutationProto_ASYNC_WAL
			b.AddCondMutation(region, index, &m, conds[i])
		},
		barrier:     func(b *hrpc.Multi, region []byte, i int) { addBarrier(b, region, muts[i].Family, muts[i].Mutation.Row) },
		onProcessed: func(i int, processed bool) { written[i] = processed },
	}, nil
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
	// size is what action i adds to a Multi, in bytes: it bounds Multis.
	size func(i int) int
	// cellBlock says that size is exactly action i's share of the cell
	// block, so that a Multi's block is allocated once rather than grown
	// by doubling (which allocates about twice the block: the write path's
	// largest buffer).
	cellBlock bool
	// add adds action i for region to the Multi, numbered index there.
	add func(b *hrpc.Multi, region []byte, index uint32, i int)
	// onResult receives the cells of a successful action (nil: ignored).
	onResult func(i int, cells []hrpc.Cell)
	// onProcessed, when set, makes every action a conditional RegionAction
	// of its own and receives its processed flag.
	onProcessed func(i int, processed bool)
	// barrier, when set, adds after each region's run of actions in a
	// Multi (i: the run's last action) a region action whose success makes
	// the run durable; when it fails, the whole run is retried.
	barrier func(b *hrpc.Multi, region []byte, i int)
	// writes marks MutateBatch's unconditional mutations: they may share
	// Multis with other calls' (coalesce.go), and Stats counts how many
	// calls their Multis carried. Nothing is handed back from their
	// answers, so an answer that arrives after its call gave up is simply
	// dropped.
	writes bool
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
		byRegion, retry, err := c.group(ctx, table, pending, ops, errs)
		if err != nil {
			last = err
		}
		parts := plan(byRegion, ops)
		for _, res := range c.runParts(ctx, parts, ops) {
			for _, f := range res.failed {
				errs[f.i] = f.err
			}
			retry = append(retry, res.retry...)
			if res.err != nil {
				last = res.err
			}
		}
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

// group locates the pending actions' regions and groups the actions by
// region, in key order within a region. Actions whose region could not be
// located are to retry, or failed for good (recorded in errs); err is the
// last retryable error.
func (c *Client) group(ctx context.Context, table string, pending []int, ops *batchOps, errs []error) (byRegion map[*RegionInfo][]int, retry []int, last error) {
	byRegion = map[*RegionInfo][]int{}
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
	return byRegion, retry, last
}

// runParts sends the parts of one attempt, each in a Multi of its own and
// in parallel, or through the write queues when they may share Multis.
func (c *Client) runParts(ctx context.Context, parts []*part, ops *batchOps) []partResult {
	if ops.writes && !c.cfg.DisableWriteCoalescing {
		return c.runShared(ctx, parts)
	}
	out := make([]partResult, len(parts))
	if len(parts) == 1 {
		out[0] = c.send(ctx, parts[0])
		return out
	}
	var wg sync.WaitGroup
	for k, p := range parts {
		wg.Go(func() { out[k] = c.send(ctx, p) })
	}
	wg.Wait()
	return out
}
