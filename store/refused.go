package store

import (
	"fmt"
)

// RefusedError reports the series of a write that the store refused while
// writing the rest of the batch: today only series that need a new UID of a
// kind whose UID space is used up. The other series of the batch are durable
// when Write returns it. It wraps ErrInvalidInput (the sender must not retry
// the refused series: a retry cannot succeed) and the cause.
type RefusedError struct {
	// Series, Samples and Histograms count what was refused (series, float
	// samples, histogram samples); the rest was written.
	Series, Samples, Histograms int
	// First describes the first refused series and why, e.g.
	// `series {__name__="up", pod="x"}: label "pod": all 4-byte tagv UIDs are assigned`.
	First string
	Err   error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%d series (%d samples, %d histograms) refused, the rest written: %s", e.Series, e.Samples, e.Histograms, e.First)
}

// Unwrap lets errors.Is find ErrInvalidInput and the cause.
func (e *RefusedError) Unwrap() []error { return []error{ErrInvalidInput, e.Err} }
