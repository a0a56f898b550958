package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/prom-hbase/prom-hbase/store"
)

// compactorFlags are the settings of the background compactor.
type compactorFlags struct {
	enabled   bool
	grace     time.Duration
	interval  time.Duration
	rate      float64
	lease     time.Duration
	batchRows int
	rawSweep  time.Duration
	// skew is the clock skew tolerated between adapters sharing the tables.
	skew time.Duration
}

func addCompactorFlags(app *kingpin.Application) *compactorFlags {
	f := &compactorFlags{}
	app.Flag("compactor.enabled", "Compact closed hours into Prometheus XOR chunks or dense cells (--storage.float-chunks) in the background. Any number of adapters may run it on the same tables; they share the work.").
		Default("true").BoolVar(&f.enabled)
	app.Flag("compactor.grace", "How long after its end an hour is compacted. Later samples still land and are folded in by a later pass.").
		Default(store.DefaultCompactGrace.String()).DurationVar(&f.grace)
	app.Flag("compactor.interval", "Time between the starts of two compaction passes.").
		Default(store.DefaultCompactInterval.String()).DurationVar(&f.interval)
	app.Flag("compactor.rate", "Most raw sample cells this adapter compacts per second, so that ingest keeps its throughput (0: no limit). Together the adapters must compact faster than samples arrive.").
		Default(fmt.Sprint(store.DefaultCompactRate)).FloatVar(&f.rate)
	app.Flag("compactor.lease", "How long a compactor's claim on a bucket-hour lasts unless renewed: the work of a killed adapter is taken over after it.").
		Default(store.DefaultCompactLease.String()).DurationVar(&f.lease)
	app.Flag("compactor.batch-rows", "Hour rows read and rewritten per storage call.").
		Default(fmt.Sprint(store.DefaultCompactBatchRows)).IntVar(&f.batchRows)
	app.Flag("compactor.raw-sweep-interval", "Least time between two major compactions of the data table's raw family that the compactor asks HBase for, after passes that folded raw cells (0: never). They drop the folded cells, which HBase otherwise keeps until its own major compaction, and which reads of hours with late samples step over. The raw family holds only the hours not compacted yet. On the embedded store: a flush of its memtable, where the deletions otherwise wait, and reads of the folded hours step over them, until it fills.").
		Default(store.DefaultRawSweepEvery.String()).DurationVar(&f.rawSweep)
	app.Flag("compactor.max-clock-skew", "Largest clock difference between adapters sharing the tables that the compactor tolerates (it waits this long more before it trusts that writes to an hour are over).").
		Default("30s").DurationVar(&f.skew)
	return f
}

// startCompactor runs the compactor, when the flags enable it, until ctx
// ends or stop is called; stop returns once it has stopped.
func startCompactor(ctx context.Context, st *store.Store, f *compactorFlags, reg prometheus.Registerer, logger *slog.Logger) (stop func(), err error) {
	if !f.enabled {
		logger.Info("compactor disabled")
		return func() {}, nil
	}
	// A holder stops writing a quarter of the lease before it expires.
	if f.lease/4 < f.skew {
		return nil, fmt.Errorf("--compactor.lease %v: a quarter of it must cover --compactor.max-clock-skew %v", f.lease, f.skew)
	}
	rate := f.rate
	if rate <= 0 {
		rate = -1 // store.CompactorConfig: negative means no limit
	}
	c, err := st.NewCompactor(store.CompactorConfig{
		Grace:         storeGrace(f.grace),
		Interval:      f.interval,
		Rate:          rate,
		Lease:         f.lease,
		Quiet:         store.MarkRefresh + st.WriteTimeout() + f.skew,
		BatchRows:     f.batchRows,
		RawSweepEvery: rawSweep(f.rawSweep),
		Registerer:    reg,
		Logger:        logger.With("component", "compactor"),
	})
	if err != nil {
		return nil, fmt.Errorf("compactor: %w", err)
	}
	logger.Info("compactor started", "grace", f.grace, "interval", f.interval, "rate", f.rate, "lease", f.lease, "raw_sweep_interval", f.rawSweep)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// rawSweep is --compactor.raw-sweep-interval as the store takes it: 0 there
// means the default, while a user's 0s means never.
func rawSweep(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// storeGrace is --compactor.grace as the store takes it: there a zero grace
// means the default, while a user's 0s means none.
func storeGrace(d time.Duration) time.Duration {
	if d <= 0 {
		return store.NoGrace
	}
	return d
}
