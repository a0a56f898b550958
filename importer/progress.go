package importer

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// redrawEvery is how often the terminal line is redrawn.
const redrawEvery = 250 * time.Millisecond

// progress counts what the run has done, for the progress line (redrawn in
// place on a terminal) or the periodic log lines.
type progress struct {
	out      io.Writer // the terminal; nil: log lines
	logEvery time.Duration
	logger   *slog.Logger
	began    time.Time

	units   int64 // units to import (not done before)
	planned int64 // their samples, when every one's size is known; else 0

	done, skips          atomic.Int64
	series, samples, hst atomic.Int64
}

func newProgress(cfg Config, runs []*unitRun, began time.Time) *progress {
	p := &progress{out: cfg.Progress, logEvery: cfg.LogEvery, logger: cfg.Logger, began: began}
	known := true
	for _, u := range runs {
		if u.skip {
			continue
		}
		p.units++
		p.planned += u.u.Samples
		known = known && u.u.Samples > 0
	}
	if !known {
		p.planned = 0
	}
	return p
}

func (p *progress) written(samples, hists int64) {
	p.samples.Add(samples + hists)
	p.hst.Add(hists)
}

func (p *progress) unitDone() { p.done.Add(1) }
func (p *progress) skipped()  { p.skips.Add(1) }

// start draws or logs until the returned stop is called; stop draws or
// logs the last state.
func (p *progress) start() (stop func()) {
	every := p.logEvery
	if p.out != nil {
		every = redrawEvery
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				p.report(time.Now())
			}
		}
	})
	return func() {
		close(quit)
		wg.Wait()
		p.report(time.Now())
		if p.out != nil {
			fmt.Fprintln(p.out)
		}
	}
}

func (p *progress) report(now time.Time) {
	elapsed := now.Sub(p.began)
	samples := p.samples.Load()
	rate := float64(samples) / max(elapsed.Seconds(), 1e-3)
	done := p.done.Load()
	eta := "?"
	switch {
	case done == p.units:
		eta = "0s"
	case p.planned > 0 && rate > 0:
		eta = fmtDuration(time.Duration(float64(max(p.planned-samples, 0)) / rate * float64(time.Second)))
	case p.planned == 0 && done > 0:
		eta = fmtDuration(time.Duration(float64(elapsed) * float64(p.units-done) / float64(done)))
	}
	if p.out == nil {
		p.logger.Info("import progress", "units_done", done, "units", p.units, "units_skipped", p.skips.Load(),
			"series", p.series.Load(), "samples", samples, "histograms", p.hst.Load(),
			"samples_per_second", int64(rate), "eta", eta)
		return
	}
	fmt.Fprintf(p.out, "\rimport: units %d/%d", done, p.units)
	if s := p.skips.Load(); s > 0 {
		fmt.Fprintf(p.out, " (+%d done before)", s)
	}
	fmt.Fprintf(p.out, "  series %s  samples %s  %s samples/s  ETA %s\x1b[K",
		si(float64(p.series.Load())), si(float64(samples)), si(rate), eta)
}

// si formats n with an SI suffix: 999, 1.23k, 45.6M.
func si(n float64) string {
	for _, u := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if n >= u.f {
			return fmt.Sprintf("%.3g%s", n/u.f, u.s)
		}
	}
	return fmt.Sprintf("%.0f", n)
}

// fmtDuration rounds d to the second.
func fmtDuration(d time.Duration) string { return d.Round(time.Second).String() }
