package importer

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// counts are a unit's series, float samples and histogram samples.
type counts struct{ series, samples, hists int64 }

// unitRun is one unit being imported: its batches in flight and the first
// error of their writes.
type unitRun struct {
	u    Unit
	key  []byte
	skip bool // done in an earlier run: only verified, if asked

	pending sync.WaitGroup
	mu      sync.Mutex
	err     error
}

func (u *unitRun) written(err error) {
	if err != nil {
		u.mu.Lock()
		if u.err == nil {
			u.err = err
		}
		u.mu.Unlock()
	}
	u.pending.Done()
}

// run is the state of one Run.
type run struct {
	cfg   Config
	drops drops
	prog  *progress
	free  chan *batch // empty batches: at most 2 x Workers exist
	todo  chan *batch // full batches, to the writers
	locks hourLocks   // the series-hours being written
	seed  maphash.Seed
	sum   Summary
	sumMu sync.Mutex
}

// Run imports every unit of cfg.Source that the state does not hold as
// done (all of them with Force), Workers units and Workers writes at a time,
// and marks each unit done once all its writes are durable. It returns the
// summary, also on error; a unit that failed is not marked and is imported
// again by the next run. With Verify, a mismatch makes the error ErrVerify.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	cfg.setDefaults()
	if cfg.Verify && cfg.Reader == nil {
		return nil, errors.New("importer: Verify needs a Reader")
	}
	start := time.Now()
	units, err := cfg.Source.Units(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the units to import: %w", err)
	}
	r := &run{cfg: cfg, free: make(chan *batch, 2*cfg.Workers), todo: make(chan *batch), seed: maphash.MakeSeed()}
	runs, err := r.plan(ctx, units)
	if err != nil {
		return nil, err
	}
	for range 2 * cfg.Workers {
		r.free <- &batch{}
	}
	r.prog = newProgress(cfg, runs, start)
	stopProgress := r.prog.start()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var writers sync.WaitGroup
	for range cfg.Workers {
		writers.Go(func() { r.writeLoop(ctx) })
	}
	queue := make(chan *unitRun)
	var readers sync.WaitGroup
	for range min(cfg.Workers, max(len(runs), 1)) {
		readers.Go(func() {
			for u := range queue {
				if err := r.unit(ctx, u); err != nil {
					cancel(fmt.Errorf("unit %s: %w", u.u.ID, err))
				}
			}
		})
	}
dispatch:
	for _, u := range runs {
		select {
		case queue <- u:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(queue)
	readers.Wait()
	close(r.todo)
	writers.Wait()
	stopProgress()

	sum := r.summary(len(units), time.Since(start))
	if err := context.Cause(ctx); err != nil {
		return sum, err
	}
	if len(sum.Mismatches) > 0 {
		return sum, fmt.Errorf("%w: %d of %d units differ", ErrVerify, len(sum.Mismatches), sum.Verified)
	}
	return sum, nil
}

// plan reads the state: which units are done already.
func (r *run) plan(ctx context.Context, units []Unit) ([]*unitRun, error) {
	runs := make([]*unitRun, len(units))
	keys := make([][]byte, len(units))
	for i, u := range units {
		runs[i] = &unitRun{u: u, key: stateKey(r.cfg.Selection, u.ID)}
		keys[i] = runs[i].key
	}
	if r.cfg.State == nil || r.cfg.Force {
		return runs, nil
	}
	done, err := r.cfg.State.done(ctx, keys, r.cfg.From)
	if err != nil {
		return nil, err
	}
	for i, d := range done {
		runs[i].skip = d
	}
	return runs, nil
}

// writeLoop writes the batches the readers fill and releases their
// series-hours (the readers took them: importUnit).
func (r *run) writeLoop(ctx context.Context) {
	for b := range r.todo {
		err := r.write(ctx, b.series)
		r.locks.unlock(b.hours)
		if err == nil {
			r.prog.written(int64(len(b.samples)), int64(len(b.hists)))
		}
		u := b.unit
		b.reset()
		r.free <- b
		u.written(err)
	}
}

// unit imports one unit (unless it is done already), marks it done, and
// verifies it when asked.
func (r *run) unit(ctx context.Context, u *unitRun) error {
	if u.skip {
		r.prog.skipped()
		r.addUnit(func(s *Summary) { s.Skipped++ })
	} else {
		c, err := r.importUnit(ctx, u)
		if err != nil {
			r.addUnit(func(s *Summary) { s.Failed++ })
			return err
		}
		if r.cfg.State != nil {
			if err := r.cfg.State.markDone(ctx, u.key, r.cfg.From, c, time.Now()); err != nil {
				return err
			}
		}
		r.prog.unitDone()
		r.cfg.Logger.Debug("unit imported", "unit", u.u.ID, "series", c.series, "samples", c.samples, "histograms", c.hists)
		r.addUnit(func(s *Summary) {
			s.Imported++
			s.Series += c.series
			s.Samples += c.samples
			s.Histograms += c.hists
			s.Bytes += u.u.Bytes
		})
	}
	if !r.cfg.Verify {
		return nil
	}
	m, err := r.verify(ctx, u.u)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	r.addUnit(func(s *Summary) {
		s.Verified++
		if m != nil {
			s.Mismatches = append(s.Mismatches, *m)
		}
	})
	if m != nil {
		r.cfg.Logger.Error("unit differs from its source after import", "unit", u.u.ID, "diff", m.String())
	}
	return nil
}

func (r *run) addUnit(f func(*Summary)) {
	r.sumMu.Lock()
	f(&r.sum)
	r.sumMu.Unlock()
}

// importUnit reads a unit's series into batches and waits until the
// writers have made every batch durable.
func (r *run) importUnit(ctx context.Context, u *unitRun) (c counts, err error) {
	it, err := r.cfg.Source.Open(ctx, u.u)
	if err != nil {
		return c, fmt.Errorf("open: %w", err)
	}
	// The source's memory may back what the batches hold: it is closed
	// only once they are written.
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	b, err := r.getBatch(ctx)
	if err != nil {
		return c, err
	}
	var h maphash.Hash
	h.SetSeed(r.seed)
	bt := batcher{max: r.cfg.BatchSamples, cur: b, emit: func(full *batch) (*batch, error) {
		// The batch's series-hours are taken here, by the reader, and
		// released by the writer: a batch that must wait for another's
		// write keeps no writer from the batches of other units.
		full.unit = u
		full.hours = appendSeriesHours(full.hours[:0], full.finish(), &h)
		if err := r.locks.lock(ctx, full.hours); err != nil {
			full.reset()
			r.free <- full
			return nil, err
		}
		u.pending.Add(1)
		select {
		case r.todo <- full:
		case <-ctx.Done():
			r.locks.unlock(full.hours)
			u.pending.Done()
			full.reset()
			r.free <- full
			return nil, context.Cause(ctx)
		}
		return r.getBatch(ctx)
	}}
	c, err = r.readUnit(it, &bt)
	if err == nil {
		err = bt.flush()
	}
	if bt.cur != nil {
		bt.cur.reset()
		r.free <- bt.cur
	}
	u.pending.Wait()
	if err != nil {
		return c, err
	}
	return c, u.err
}

// readUnit feeds every piece of the unit to the batcher. A series counts
// once however many pieces it comes in: a source may come back to it (an
// OpenTSDB unit yields a series once per hour), so the hashes of the
// unit's series are kept, about 40 bytes a series.
func (r *run) readUnit(it SeriesIterator, bt *batcher) (counts, error) {
	var (
		c    counts
		prev []labels.Label
		seen = map[uint64]struct{}{}
		mh   maphash.Hash // its seed stays for the unit
	)
	for it.Next() {
		in, ok := check(it.At(), r.cfg.Limits, &r.drops)
		if !ok {
			continue
		}
		if !slices.Equal(in.Labels, prev) {
			prev = append(prev[:0], in.Labels...)
			if h := labelsHash(&mh, in.Labels); !has(seen, h) {
				seen[h] = struct{}{}
				c.series++
				r.prog.series.Add(1)
			}
		}
		c.samples += int64(len(in.Samples))
		c.hists += int64(len(in.Histograms))
		if err := bt.add(in.Labels, in.Samples, in.Histograms); err != nil {
			return c, err
		}
	}
	if err := it.Err(); err != nil {
		return c, fmt.Errorf("read: %w", err)
	}
	return c, nil
}

func (r *run) getBatch(ctx context.Context) (*batch, error) {
	select {
	case b := <-r.free:
		return b, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func has(m map[uint64]struct{}, k uint64) bool {
	_, ok := m[k]
	return ok
}
