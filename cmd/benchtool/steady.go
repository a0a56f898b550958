package main

import (
	"slices"
	"time"
)

// A JVM compiles its hot paths in tiers, each after thousands of calls, so a
// read through HBase or OpenTSDB keeps speeding up long after a fixed
// warm-up: measured on this repository's bench data, a freshly started
// HBase served the adapter's streamed read at 4-7M samples/s for the first
// 15 s of passes, 9-12M at 20-26 s, and 13.3-14.3M from 28 s on, where it
// stayed. Operators run their stores for weeks; the comparison that means
// something is of each store in its steady state. So the timed passes wait
// until the rate stops climbing, the same rule for every target (a Go
// server is steady from its first window).

// warmWindow is how long one window of untimed passes lasts at least; its
// rate is the median of its passes.
const warmWindow = 3 * time.Second

// steadyWindows is how many windows in a row must agree. The compiler
// works in steps, and the rate can stand still for several seconds between
// two of them: measured, three windows of 2 s agreed within 5 % at 9.6M
// samples/s, and the next read of the same HBase ran at 12.3-12.8M.
const steadyWindows = 5

// steady reports whether the last steadyWindows window rates spread by at
// most tol (as a fraction of the slowest of them): no climb left beyond the
// machine's noise.
func steady(windows []float64, tol float64) bool {
	if len(windows) < steadyWindows {
		return false
	}
	last := windows[len(windows)-steadyWindows:]
	lo, hi := slices.Min(last), slices.Max(last)
	return lo > 0 && hi <= lo*(1+tol)
}

// untilSteady runs untimed passes in windows of at least window until the rate is
// steady within tol or limit has passed since began, and returns the
// passes run, whether the rate settled, and the window rates.
func untilSteady(pass func() (float64, error), began time.Time, limit, window time.Duration, tol float64) (passes int, settled bool, windows []float64, err error) {
	for !steady(windows, tol) {
		if time.Since(began) >= limit {
			return passes, false, windows, nil
		}
		var rates []float64
		start := time.Now()
		for len(rates) < 3 || time.Since(start) < window {
			r, err := pass()
			if err != nil {
				return passes, false, windows, err
			}
			passes++
			rates = append(rates, r)
		}
		windows = append(windows, medianOf(rates))
	}
	return passes, true, windows, nil
}
