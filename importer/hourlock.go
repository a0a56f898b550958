package importer

import (
	"cmp"
	"context"
	"hash/maphash"
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/store"
)

// seriesHour is one hour of one series: what two WriteHistory calls must
// not write at the same time (both could find its row empty, and a chunk
// cell of one replace the other's).
type seriesHour struct {
	series uint64 // labelsHash of the series
	hour   int64  // the hour's start, Unix milliseconds
}

func compareSeriesHours(a, b seriesHour) int {
	return cmp.Or(cmp.Compare(a.series, b.series), cmp.Compare(a.hour, b.hour))
}

// hourLocks holds the series-hours of the batches being written. A unit's
// reader takes every series-hour of a batch at once before handing it to
// the writers, waiting while any is held, and the writer releases them once
// the batch is written: so the batches of a series-hour larger than a
// batch (the batcher splits it) are written one after the other, and so
// are the batches of units whose hours meet (a snapshot's head block and
// the block before it, blocks or OpenTSDB spans not aligned on hours),
// while the batches of other series-hours are written in parallel. Readers
// wait, not writers, so a waiting batch keeps no writer from the batches of
// other units; and as a reader never waits holding series-hours of a batch
// not yet handed over, no two wait for each other.
//
// A hash collision between two series only makes their batches take turns.
type hourLocks struct {
	mu   sync.Mutex
	held map[seriesHour]struct{}
	// changed is closed when a write releases its series-hours; nil while
	// no write waits.
	changed chan struct{}
	// waited counts the writes that had to wait (tests read it).
	waited int
}

// lock takes the series-hours hs, waiting while any is held; it fails only
// when ctx ends first.
func (l *hourLocks) lock(ctx context.Context, hs []seriesHour) error {
	for waited := false; ; waited = true {
		l.mu.Lock()
		if !l.anyHeld(hs) {
			if l.held == nil {
				l.held = make(map[seriesHour]struct{})
			}
			for _, h := range hs {
				l.held[h] = struct{}{}
			}
			l.mu.Unlock()
			return nil
		}
		if !waited {
			l.waited++
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (l *hourLocks) anyHeld(hs []seriesHour) bool {
	for _, h := range hs {
		if _, ok := l.held[h]; ok {
			return true
		}
	}
	return false
}

// unlock releases the series-hours hs, taken by lock.
func (l *hourLocks) unlock(hs []seriesHour) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range hs {
		delete(l.held, h)
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// appendSeriesHours appends the series-hours that series write to dst,
// sorted, each once. Timestamps are non-negative (check drops the others).
func appendSeriesHours(dst []seriesHour, series []store.SeriesIn, h *maphash.Hash) []seriesHour {
	n := len(dst)
	for i := range series {
		in := &series[i]
		id := labelsHash(h, in.Labels)
		dst = appendHours(dst, id, len(in.Samples), func(k int) int64 { return in.Samples[k].T })
		dst = appendHours(dst, id, len(in.Histograms), func(k int) int64 { return in.Histograms[k].T })
	}
	slices.SortFunc(dst[n:], compareSeriesHours)
	return append(dst[:n], slices.Compact(dst[n:])...)
}

// appendHours appends a series-hour of series id for each hour that the n
// time-sorted timestamps ts(0..n-1) fall in: one search per hour, not a
// division per sample.
func appendHours(dst []seriesHour, id uint64, n int, ts func(int) int64) []seriesHour {
	for i := 0; i < n; {
		t := ts(i)
		hour := t - t%hourMillis
		dst = append(dst, seriesHour{series: id, hour: hour})
		i += sort.Search(n-i, func(k int) bool { return ts(i+k) >= hour+hourMillis })
	}
	return dst
}

// labelsHash identifies a series as the store does: labels with an empty
// value are left out, as the store drops them.
func labelsHash(h *maphash.Hash, ls []labels.Label) uint64 {
	h.Reset()
	for _, l := range ls {
		if l.Value == "" {
			continue
		}
		h.WriteString(l.Name)
		h.WriteByte(0xff) // no valid label name or UTF-8 value holds it
		h.WriteString(l.Value)
		h.WriteByte(0xff)
	}
	return h.Sum64()
}
