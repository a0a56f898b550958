// Package rowkey owns the byte layout of the data table's row keys:
//
//	[salt: 0 or 1 byte][metric UID][base hour: uint32 BE seconds][tagk UID][tagv UID]...
//
// all fixed-width big-endian, tag pairs sorted by tag key UID (DESIGN.md
// section 2). It builds and parses keys, computes the salt, the scan ranges
// of a query and the row-key filters that push exact tag conditions into the
// backend.
//
// It deals in UIDs only: it must not know label strings, how UIDs are
// assigned, the cell layout, nor any backend. Every function here is part of
// the on-disk format: changing what one produces orphans existing data.
package rowkey

import (
	"cmp"
	"fmt"

	"github.com/prom-hbase/prom-hbase/uid"
)

// HourSeconds is the span of one row: a row holds one series for one hour.
const HourSeconds = 3600

// MaxSaltBuckets is the most buckets one salt byte can tell apart.
const MaxSaltBuckets = 256

// Layout is the set of widths that fixes the row-key layout of a data table.
// It is recorded in the schema row at table creation and can never change
// once data exists.
type Layout struct {
	// SaltBuckets is 0 or 1 for no salt byte; 2..256 for one salt byte
	// holding the series' bucket.
	SaltBuckets int
	// MetricWidth, TagKWidth and TagVWidth are the UID widths in bytes, 1..8.
	MetricWidth, TagKWidth, TagVWidth int
}

// DefaultLayout is the layout of DESIGN.md: 3-byte metric and tag key UIDs,
// 4-byte tag value UIDs (3 bytes run out in Kubernetes fleets with pod churn),
// and 16 salt buckets (one metric's writes spread over up to 16 regions, and
// a query scans 16 key ranges in parallel).
var DefaultLayout = Layout{SaltBuckets: 16, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4}

// WithDefaults is l with each of its fields that is 0 taken from d: for a
// configuration where 0 means a setting left out (SaltBuckets 1 then
// stands for no salt byte).
func (l Layout) WithDefaults(d Layout) Layout {
	l.SaltBuckets = cmp.Or(l.SaltBuckets, d.SaltBuckets)
	l.MetricWidth = cmp.Or(l.MetricWidth, d.MetricWidth)
	l.TagKWidth = cmp.Or(l.TagKWidth, d.TagKWidth)
	l.TagVWidth = cmp.Or(l.TagVWidth, d.TagVWidth)
	return l
}

// Validate reports the first setting outside its range, by name.
func (l Layout) Validate() error {
	if l.SaltBuckets < 0 || l.SaltBuckets > MaxSaltBuckets {
		return fmt.Errorf("salt buckets %d out of range 0..%d", l.SaltBuckets, MaxSaltBuckets)
	}
	for _, w := range [...]struct {
		name  string
		width int
	}{{"metric", l.MetricWidth}, {"tagk", l.TagKWidth}, {"tagv", l.TagVWidth}} {
		if w.width < 1 || w.width > 8 {
			return fmt.Errorf("%s UID width %d out of range 1..8", w.name, w.width)
		}
	}
	return nil
}

// valid is Validate without the error, for hot paths that must not panic on
// a zero Layout.
func (l Layout) valid() bool {
	return l.SaltBuckets >= 0 && l.SaltBuckets <= MaxSaltBuckets &&
		l.MetricWidth >= 1 && l.MetricWidth <= 8 &&
		l.TagKWidth >= 1 && l.TagKWidth <= 8 &&
		l.TagVWidth >= 1 && l.TagVWidth <= 8
}

// SaltWidth is the length of the salt prefix: 0 or 1.
func (l Layout) SaltWidth() int {
	if l.SaltBuckets >= 2 {
		return 1
	}
	return 0
}

// PairWidth is the length of one tag pair in a key.
func (l Layout) PairWidth() int { return l.TagKWidth + l.TagVWidth }

// HeaderWidth is the length of the key before the first tag pair: salt,
// metric UID and base hour.
func (l Layout) HeaderWidth() int { return l.SaltWidth() + l.MetricWidth + 4 }

// Width is the UID width of the kind in bytes (0 for an unknown kind).
func (l Layout) Width(kind uid.Kind) int {
	switch kind {
	case uid.Metric:
		return l.MetricWidth
	case uid.TagK:
		return l.TagKWidth
	case uid.TagV:
		return l.TagVWidth
	}
	return 0
}

// MaxUID is the largest UID of the kind that fits its width.
func (l Layout) MaxUID(kind uid.Kind) uint64 { return uid.Max(l.Width(kind)) }

// CheckUID reports whether uid fits the width of its kind. The builders
// (AppendSeriesID) do not check, for speed: whoever hands out UIDs checks
// them once, at assignment, with this.
func (l Layout) CheckUID(kind uid.Kind, v uint64) error {
	w := l.Width(kind)
	if w == 0 {
		return fmt.Errorf("unknown UID kind %d", uint8(kind))
	}
	if v > uid.Max(w) {
		return fmt.Errorf("%s UID %d does not fit in %d bytes", kind, v, w)
	}
	return nil
}

// CheckSeries reports whether a series can be encoded: every UID fits its
// width and the tag keys are strictly ascending (sorted, no duplicates), as
// AppendSeriesID requires.
func (l Layout) CheckSeries(metric uint64, tags []TagPair) error {
	if err := l.CheckUID(uid.Metric, metric); err != nil {
		return err
	}
	for i, t := range tags {
		if err := l.CheckUID(uid.TagK, t.K); err != nil {
			return err
		}
		if err := l.CheckUID(uid.TagV, t.V); err != nil {
			return err
		}
		if i > 0 && tags[i-1].K >= t.K {
			return fmt.Errorf("tag keys not strictly ascending at pair %d: %d after %d", i, t.K, tags[i-1].K)
		}
	}
	return nil
}
