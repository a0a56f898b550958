//go:build race

package remote

// raceEnabled: the race detector's instrumentation allocates, so tests that
// measure allocations skip those checks under it.
const raceEnabled = true
