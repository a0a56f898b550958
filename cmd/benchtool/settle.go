package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase"
)

// An ingest run that stops its clock once the samples are durable leaves
// HBase work it caused: the flushes and compactions of the cells it wrote
// (and, on a table that has just grown past its split size, the split and
// the daughters' rewrites). Counted nowhere, that work lands in whichever
// run comes next, and a system's runs then meet the debt of their own
// earlier runs, or of the other system's. Settling after the clock makes
// each run start from a quiet HBase and reports what the debt cost.

// settleConfig says what a settled HBase is: no region of tables
// compacting, and the meter's process named hbase (if it has one) below
// idleCPU CPU-seconds a poll, for quiet polls poll apart in a row.
type settleConfig struct {
	zk      string
	tables  []string
	quiet   int
	idleCPU float64
	poll    time.Duration
	timeout time.Duration
}

// compactingFunc says whether a compaction of table runs or is queued.
type compactingFunc func(ctx context.Context, table string) (bool, error)

// settled is what settling found: how long HBase took to go quiet after the
// clock stopped, the CPU the meter's processes spent until then, and
// whether the timeout cut the wait short.
type settled struct {
	took     time.Duration
	cpu      map[string]float64
	timedOut bool
}

// settleHBase settles on the HBase of cfg.zk, asking its region servers
// for their regions' compaction state.
func settleHBase(ctx context.Context, cfg settleConfig, m *cpuMeter) (settled, error) {
	c := hbase.New(hbase.Config{ZooKeeper: cfg.zk})
	defer c.Close()
	return settle(ctx, cfg, c.Compacting, m)
}

// settle polls after a run until HBase is quiet (see settleConfig) and
// measures, with m, the CPU spent from its call until the quiet began.
// Errors of the compaction-state calls (a region splitting, say) count as
// busy; only the meter's own errors end it.
func settle(ctx context.Context, cfg settleConfig, compacting compactingFunc, m *cpuMeter) (settled, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if err := m.start(); err != nil {
		return settled{}, err
	}
	begin := time.Now()
	last := settled{cpu: map[string]float64{"total": 0}}
	for _, p := range m.pids {
		last.cpu[p.name] = 0
	}
	quietSince := last
	for streak := 0; streak < cfg.quiet; {
		select {
		case <-ctx.Done():
			last.timedOut = true
			return last, nil
		case <-time.After(cfg.poll):
		}
		busy := false
		for _, t := range cfg.tables {
			if b, err := compacting(ctx, t); err != nil || b {
				busy = true
				break
			}
		}
		cpu, err := m.stop()
		if err != nil {
			return settled{}, err
		}
		if cpu["hbase"]-last.cpu["hbase"] > cfg.idleCPU {
			busy = true
		}
		if busy {
			streak = 0
		} else if streak++; streak == 1 {
			// The quiet began at the poll before this one.
			quietSince = last
		}
		last = settled{took: time.Since(begin), cpu: cpu}
	}
	return quietSince, nil
}

// formatSettled is settled's key=value figures, CPU per unit of per.
func formatSettled(s settled, per float64, unit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, " settle_s=%.1f", s.took.Seconds())
	if s.timedOut {
		b.WriteString(" settle_timed_out=1")
	}
	for _, k := range sortedKeys(s.cpu) {
		fmt.Fprintf(&b, " settle_cpu_s_%s=%.2f settle_cpu_s_%s_per_%s=%.3f", k, s.cpu[k], k, unit, s.cpu[k]/per)
	}
	return b.String()
}
