package importer

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Summary is what a run did.
type Summary struct {
	// Units the source listed; of them, Imported in this run, Skipped as
	// done by an earlier run, Failed (not marked done: the next run imports
	// them again).
	Units, Imported, Skipped, Failed int
	// What the imported units held: series (per unit), float samples,
	// histogram samples, and the bytes of the units where the source keeps
	// them (Unit.Bytes).
	Series, Samples, Histograms, Bytes int64
	Elapsed                            time.Duration
	// Dropped is what the store cannot hold, by reason.
	Dropped []Dropped
	// Verified units, and those that differ from their source.
	Verified   int
	Mismatches []Mismatch
}

// Rate is the samples and histograms imported per second.
func (s *Summary) Rate() float64 {
	return float64(s.Samples+s.Histograms) / max(s.Elapsed.Seconds(), 1e-9)
}

// Print writes the summary for a human, a few lines.
func (s *Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "imported %d of %d units (%d done before, %d failed): %d series, %d samples (%d floats, %d histograms), %s read, in %.1fs: %.0f samples/s\n",
		s.Imported, s.Units, s.Skipped, s.Failed, s.Series, s.Samples+s.Histograms, s.Samples, s.Histograms,
		bytesString(s.Bytes), s.Elapsed.Seconds(), s.Rate())
	for _, d := range s.Dropped {
		fmt.Fprintf(w, "dropped (%s): %d series whole, %d samples in all; first: %s\n", d.Reason, d.Series, d.Samples, d.Example)
	}
	if s.Verified == 0 {
		return
	}
	if len(s.Mismatches) == 0 {
		fmt.Fprintf(w, "verified %d units: the store holds what the source holds\n", s.Verified)
		return
	}
	fmt.Fprintf(w, "verified %d units: %d DIFFER from the source:\n", s.Verified, len(s.Mismatches))
	for _, m := range s.Mismatches {
		fmt.Fprintf(w, "  %s\n", m.String())
	}
}

func bytesString(n int64) string {
	if n <= 0 {
		return "? bytes"
	}
	const mib = 1 << 20
	if n < mib {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/mib)
}

// summary completes the run's counts.
func (r *run) summary(units int, elapsed time.Duration) *Summary {
	r.sumMu.Lock()
	defer r.sumMu.Unlock()
	s := r.sum
	s.Units = units
	s.Elapsed = elapsed
	s.Dropped = r.drops.list()
	if dr, ok := r.cfg.Source.(DropReporter); ok {
		s.Dropped = append(s.Dropped, dr.Dropped()...)
		slices.SortFunc(s.Dropped, func(a, b Dropped) int { return strings.Compare(a.Reason, b.Reason) })
	}
	s.Mismatches = slices.Clone(s.Mismatches)
	slices.SortFunc(s.Mismatches, func(a, b Mismatch) int { return strings.Compare(a.Unit, b.Unit) })
	return &s
}
