package importer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prom-hbase/prom-hbase/store"
)

// write writes a batch's series: storage faults are retried (a write is
// safe to repeat), series the store refuses are dropped and counted, the
// rest written.
func (r *run) write(ctx context.Context, series []store.SeriesIn) error {
	err := r.writeRetrying(ctx, series)
	var refused *store.RefusedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused):
		// The rest of the batch is durable; these cannot be written by any
		// retry.
		r.drops.add(ReasonUIDExhausted, refused.Series, refused.Samples+refused.Histograms, refused.First)
		return nil
	case errors.Is(err, store.ErrInvalidInput):
		// Nothing was written: find the series refused by halving.
		if len(series) == 1 {
			in := series[0]
			r.drops.add(ReasonRefused, 1, len(in.Samples)+len(in.Histograms), err.Error())
			return nil
		}
		half := len(series) / 2
		if err := r.write(ctx, series[:half]); err != nil {
			return err
		}
		return r.write(ctx, series[half:])
	default:
		return err
	}
}

// writeRetrying calls the Writer until it succeeds, refuses the input, or
// Attempts tries have failed.
func (r *run) writeRetrying(ctx context.Context, series []store.SeriesIn) error {
	backoff := r.cfg.Backoff
	for attempt := 1; ; attempt++ {
		wctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
		err := r.cfg.Writer.WriteHistory(wctx, series)
		cancel()
		if err == nil || errors.Is(err, store.ErrInvalidInput) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt >= r.cfg.Attempts {
			return fmt.Errorf("write of %d series failed %d times, last: %w", len(series), attempt, err)
		}
		r.cfg.Logger.Warn("import write failed; retrying", "attempt", attempt, "in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}
