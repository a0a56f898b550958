package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// seriesRef is a series found in phase one. It holds what phase two needs
// and no more: its hours are the first and last it has a row in, since a
// query holds the distinct series of a metric, not every (series, hour).
// Phase two asks for every hour in between: the ROW bloom filter makes a
// missing row cheap.
type seriesRef struct {
	sid         string // series ID: metric UID and tag pairs
	first, last uint32 // base hours
	lset        labels.Labels
	// prefetched: phase one read the series' rows (prefetch.go), which
	// are these, by hour; phase two does not ask for them.
	prefetched bool
	rows       []hourRow
	// mem is the arena the rows are in, given back once the series' group
	// is read (releaseRows).
	mem *arena
}

// findSeries runs phase one for one group of metrics (DESIGN.md section 4,
// step 3): per metric, one scan per group of its salt buckets' ranges that
// the backend serves together (HBase: the ranges in one region), over the
// query's hours, in parallel, collecting the distinct series and, when
// prefetch is set and within the budget, their rows (prefetch.go); then
// their labels resolved, the post matchers applied, and the series sorted by
// labels.
//
// marks, when not nil, are the query's marks being read: p.raw is not set
// yet, and each scan reads what it may before they are in (earlyread.go).
func (s *Store) findSeries(ctx context.Context, p *queryPlan, group []metricRef, startHour, endHour uint32, prefetch bool, marks *marksRead) ([]seriesRef, error) {
	tasks, err := s.scanTasks(ctx, p, group, startHour, endHour)
	if err != nil {
		return nil, err
	}
	share := 0
	if prefetch && s.cfg.ReadPrefetchBytes > 0 && len(tasks) > 0 {
		budget := s.cfg.ReadPrefetchBytes
		share = max(min(minPrefetchShare, budget), budget/len(tasks))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		series []seriesRef
		first  error
		wg     sync.WaitGroup
		sem    = make(chan struct{}, s.cfg.ScanConcurrency)
	)
	run := func(t scanTask) {
		defer func() { <-sem }()
		var (
			found []seriesRef
			err   error
		)
		if marks != nil && len(t.data) > 0 {
			// A task of t.all alone reads every family: no marks needed.
			found, err = s.scanEarly(ctx, t, p.conds, share, marks, startHour, endHour)
		} else {
			found, err = s.scanRanges(ctx, t, p.conds, share)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if first == nil {
				first = err
				cancel()
			}
			return
		}
		series = append(series, found...)
	}
	for i, t := range tasks {
		sem <- struct{}{}
		if i == len(tasks)-1 {
			// The last scan runs in the calling goroutine (for a query's
			// first group, the query's own, whose stack has grown to a
			// scan's depth already): a fresh goroutine's stack grows by
			// copying. On make bench's streamed read, where a metric is
			// one scan, stack growth went from 3.9 % of the adapter's CPU
			// to 1.6 % (BENCHMARKS.md).
			run(t)
			break
		}
		wg.Go(func() { run(t) })
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	series, err = s.labelSeries(ctx, p, group, series)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(series, func(a, b seriesRef) int { return labels.Compare(a.lset, b.lset) })
	return series, nil
}

// scanTask is the phase one of ranges of one metric that one scan serves:
// data are read of FamilyData alone, all (hours the compaction table
// marks) of every family, each list one scan (rawhours.go).
type scanTask struct {
	metric    uint64
	filter    *table.KeyFilter
	data, all []table.RowRange
}

// scanTasks cuts phase one into scans: per metric, its ranges grouped as
// the data table serves them together.
func (s *Store) scanTasks(ctx context.Context, p *queryPlan, group []metricRef, startHour, endHour uint32) ([]scanTask, error) {
	var (
		tasks  []scanTask
		ranges []rowkey.Range
	)
	for _, m := range group {
		filter := keyFilter(s.layout.KeyRegex(m.uid, p.conds))
		ranges = s.layout.AppendScanRanges(ranges[:0], m.uid, startHour, endHour)
		rows := make([]table.RowRange, 0, len(ranges))
		for _, r := range ranges {
			if r.Stop == nil {
				// The last range of the key space: a range scan of its own,
				// of every family.
				tasks = append(tasks, scanTask{metric: m.uid, filter: filter, all: []table.RowRange{table.RowRange(r)}})
				continue
			}
			rows = append(rows, table.RowRange(r))
		}
		groups, err := table.GroupRanges(ctx, s.data, rows)
		if err != nil {
			return nil, fmt.Errorf("phase one: %w", err)
		}
		for _, g := range groups {
			data, all := s.splitRaw(g, m.uid, startHour, endHour, p.raw)
			tasks = append(tasks, scanTask{metric: m.uid, filter: filter, data: data, all: all})
		}
	}
	return tasks, nil
}

// sidTags appends the tag pairs of a series ID.
func (s *Store) sidTags(dst []rowkey.TagPair, sid string) []rowkey.TagPair {
	kw, pw := s.layout.TagKWidth, s.layout.PairWidth()
	for off := s.layout.MetricWidth; off+pw <= len(sid); off += pw {
		p := bytesOf(sid[off : off+pw])
		dst = append(dst, rowkey.TagPair{K: labels2uid.DecodeUID(p[:kw]), V: labels2uid.DecodeUID(p[kw:])})
	}
	return dst
}

func (s *Store) sidMetric(sid string) uint64 {
	return labels2uid.DecodeUID(bytesOf(sid[:s.layout.MetricWidth]))
}

// bytesOf views s as bytes, for reading only.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// labelSeries resolves the labels of the series (reverse lookups batched per
// kind, each distinct UID once), drops those the post matchers reject, and
// sets their label sets.
func (s *Store) labelSeries(ctx context.Context, p *queryPlan, group []metricRef, series []seriesRef) ([]seriesRef, error) {
	metricNames := make(map[uint64]string, len(group))
	for _, m := range group {
		metricNames[m.uid] = m.name
	}
	var ks, vs []uint64
	seenK, seenV := map[uint64]int{}, map[uint64]int{}
	var tags []rowkey.TagPair
	for i := range series {
		tags = s.sidTags(tags[:0], series[i].sid)
		for _, t := range tags {
			if _, ok := seenK[t.K]; !ok {
				seenK[t.K] = len(ks)
				ks = append(ks, t.K)
			}
			if _, ok := seenV[t.V]; !ok {
				seenV[t.V] = len(vs)
				vs = append(vs, t.V)
			}
		}
	}
	kNames, err := s.uids.Names(ctx, labels2uid.TagK, ks, nil)
	if err != nil {
		return nil, fmt.Errorf("resolve label names: %w", err)
	}
	vNames, err := s.uids.Names(ctx, labels2uid.TagV, vs, nil)
	if err != nil {
		return nil, fmt.Errorf("resolve label values: %w", err)
	}
	var sb labels.ScratchBuilder
	out := series[:0]
	for _, sr := range series {
		tags = s.sidTags(tags[:0], sr.sid)
		if !p.accept(tags, vNames, seenV) {
			continue
		}
		sb.Reset()
		if name := metricNames[s.sidMetric(sr.sid)]; name != "" {
			sb.Add(model.MetricNameLabel, name)
		}
		for _, t := range tags {
			sb.Add(kNames[seenK[t.K]], vNames[seenV[t.V]])
		}
		sb.Sort()
		sr.lset = sb.Labels()
		out = append(out, sr)
	}
	clear(series[len(out):])
	return out, nil
}

// accept checks the post matchers on a series' tags (sorted by key UID),
// each distinct value once per query.
func (p *queryPlan) accept(tags []rowkey.TagPair, vNames []string, vIdx map[uint64]int) bool {
	for _, pm := range p.post {
		i, ok := slices.BinarySearchFunc(tags, pm.k, func(t rowkey.TagPair, k uint64) int { return compareUint64(t.K, k) })
		if !ok {
			if !pm.matchesEmpty {
				return false
			}
			continue
		}
		v := tags[i].V
		match, seen := pm.byValue[v]
		if !seen {
			match = pm.m.Matches(vNames[vIdx[v]])
			pm.byValue[v] = match
		}
		if !match {
			return false
		}
	}
	return true
}

// keyFilter is the storage interface's filter for a row-key regex; nil for
// none.
func keyFilter(regex string) *table.KeyFilter {
	if regex == "" {
		return nil
	}
	return &table.KeyFilter{Regex: regex}
}
