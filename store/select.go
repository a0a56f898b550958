package store

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// plan is what a query's matchers become (DESIGN.md section 4, step 1).
type plan struct {
	metrics []metricRef
	// conds are the exact UID conditions, pushed into the scans.
	conds []rowkey.TagCond
	// post are the matchers checked per series after the scans, on tag
	// values resolved once per distinct UID.
	post []*postMatcher
}

type metricRef struct {
	uid  uint64
	name string
}

type postMatcher struct {
	m            *labels.Matcher
	k            uint64
	matchesEmpty bool
	byValue      map[uint64]bool
}

// lookupable reports whether s can have a UID: the empty string has UID 0 by
// convention and NUL-prefixed strings are reserved, so neither is looked up.
func lookupable(s string) bool { return s != "" && s[0] != 0 }

// planQuery turns the matchers into a plan; a nil plan means no series can
// match, which is known without a scan.
func (s *Store) planQuery(ctx context.Context, ms []*labels.Matcher) (*plan, error) {
	var nameMs, tagMs []*labels.Matcher
	for _, m := range ms {
		if m.Name == model.MetricNameLabel {
			nameMs = append(nameMs, m)
		} else {
			tagMs = append(tagMs, m)
		}
	}
	p := &plan{}

	// Metric candidates: the values an equality or a set regex allows, or
	// every metric.
	var candidates []string
	listAll := true
	for _, m := range nameMs {
		if m.Type == labels.MatchEqual {
			candidates, listAll = []string{m.Value}, false
			break
		}
		if sm := m.SetMatches(); listAll && m.Type == labels.MatchRegexp && len(sm) > 0 {
			candidates, listAll = sm, false
		}
	}
	var b labels2uid.Batch
	if listAll {
		names, uids, err := s.uids.List(ctx, labels2uid.Metric)
		if err != nil {
			return nil, err
		}
		for i, name := range names {
			p.metrics = append(p.metrics, metricRef{uids[i], name})
		}
	} else {
		for _, name := range candidates {
			if name == "" {
				p.metrics = append(p.metrics, metricRef{0, ""})
			} else if lookupable(name) {
				b.Add(labels2uid.Metric, name)
			}
		}
	}
	// Tag keys of every matcher, and values of equality and set matchers.
	type tagRef struct{ k, v0, nv int }
	refs := make([]tagRef, len(tagMs))
	for i, m := range tagMs {
		refs[i] = tagRef{k: -1, v0: len(b.Names[labels2uid.TagV])}
		if lookupable(m.Name) {
			refs[i].k = b.Add(labels2uid.TagK, m.Name)
		}
		if m.Matches("") {
			continue // the label may be absent: checked per series
		}
		var vals []string
		switch m.Type {
		case labels.MatchEqual:
			vals = []string{m.Value}
		case labels.MatchRegexp:
			vals = m.SetMatches()
		}
		for _, v := range vals {
			if lookupable(v) {
				b.Add(labels2uid.TagV, v)
				refs[i].nv++
			}
		}
		if len(vals) == 0 {
			refs[i].nv = -1 // any value
		}
	}
	if err := s.uids.Lookup(ctx, &b); err != nil {
		return nil, fmt.Errorf("look up the query's label UIDs: %w", err)
	}
	if !listAll {
		for i, name := range b.Names[labels2uid.Metric] {
			if b.Found[labels2uid.Metric][i] {
				p.metrics = append(p.metrics, metricRef{b.UIDs[labels2uid.Metric][i], name})
			}
		}
	}
	p.metrics = slices.DeleteFunc(p.metrics, func(mr metricRef) bool {
		for _, m := range nameMs {
			if !m.Matches(mr.name) {
				return true
			}
		}
		return false
	})
	if len(p.metrics) == 0 {
		return nil, nil
	}
	for i, m := range tagMs {
		r := refs[i]
		matchesEmpty := m.Matches("")
		if r.k < 0 || !b.Found[labels2uid.TagK][r.k] {
			// No series has this label.
			if !matchesEmpty {
				return nil, nil
			}
			continue
		}
		k := b.UIDs[labels2uid.TagK][r.k]
		if !matchesEmpty {
			cond := rowkey.TagCond{K: k}
			if r.nv >= 0 {
				for j := r.v0; j < r.v0+r.nv; j++ {
					if b.Found[labels2uid.TagV][j] {
						cond.Vs = append(cond.Vs, b.UIDs[labels2uid.TagV][j])
					}
				}
				if len(cond.Vs) == 0 {
					return nil, nil // none of the allowed values exists
				}
			}
			p.conds = append(p.conds, cond)
			if m.Type == labels.MatchEqual {
				continue // the condition is exact
			}
		}
		p.post = append(p.post, &postMatcher{m: m, k: k, matchesEmpty: matchesEmpty, byValue: map[uint64]bool{}})
	}
	return p, nil
}

// seriesRef is a series found in phase one.
type seriesRef struct {
	sid    []byte // series ID: metric UID and tag pairs
	metric uint64
	tags   []rowkey.TagPair
	hours  []uint32 // base hours with a row, ascending
	lset   labels.Labels
}

// Select returns the series matching q.Matchers with their samples in
// [q.Start, q.End], in label order. Phase one finds the series by scanning
// row keys; phase two reads their rows in bounded batches as the caller
// iterates.
func (s *Store) Select(ctx context.Context, q Query) SeriesSet {
	series, err := s.findSeries(ctx, q)
	if err != nil {
		return &errSeriesSet{err: err}
	}
	ctx, cancel := context.WithCancel(ctx)
	return &seriesSet{ctx: ctx, cancel: cancel, s: s, q: q, series: series}
}

func (s *Store) findSeries(ctx context.Context, q Query) ([]*seriesRef, error) {
	if q.Start > q.End {
		return nil, nil
	}
	startHour, endHour, ok := rowkey.HourRange(q.Start, q.End)
	if !ok {
		return nil, nil
	}
	p, err := s.planQuery(ctx, q.Matchers)
	if err != nil || p == nil {
		return nil, err
	}
	series, err := s.scanSeries(ctx, p, startHour, endHour)
	if err != nil {
		return nil, err
	}
	if series, err = s.labelSeries(ctx, p, series); err != nil {
		return nil, err
	}
	slices.SortFunc(series, func(a, b *seriesRef) int { return labels.Compare(a.lset, b.lset) })
	return series, nil
}

// scanSeries runs phase one: one key-only scan per (metric, salt bucket), in
// parallel, collecting the distinct series and the hours they have rows in.
func (s *Store) scanSeries(ctx context.Context, p *plan, startHour, endHour uint32) ([]*seriesRef, error) {
	type task struct {
		metric uint64
		filter *table.KeyFilter
		r      rowkey.Range
	}
	var tasks []task
	var ranges []rowkey.Range
	for _, m := range p.metrics {
		filter := s.layout.KeyFilter(m.uid, p.conds)
		ranges = s.layout.AppendScanRanges(ranges[:0], m.uid, startHour, endHour)
		for _, r := range ranges {
			tasks = append(tasks, task{m.uid, filter, r})
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		series []*seriesRef
		first  error
		wg     sync.WaitGroup
		sem    = make(chan struct{}, s.cfg.ScanConcurrency)
	)
	for _, t := range tasks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			found, err := s.scanRange(ctx, t.metric, t.r, t.filter, p.conds)
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
		})
	}
	wg.Wait()
	return series, first
}

// scanRange lists the series of one scan range. A series lives in one salt
// bucket, so no two ranges return the same series.
func (s *Store) scanRange(ctx context.Context, metric uint64, r rowkey.Range, filter *table.KeyFilter, conds []rowkey.TagCond) ([]*seriesRef, error) {
	sc := s.data.Scan(ctx, table.ScanOptions{
		Start: r.Start, Stop: r.Stop, Family: FamilyData,
		KeyOnly: true, FirstCellOnly: true, Filter: filter,
	})
	defer sc.Close()
	var (
		out   []*seriesRef
		bySID = map[string]*seriesRef{}
		sid   []byte
	)
	for sc.Next() {
		key := sc.At().Key
		k, err := s.layout.Parse(key)
		if err != nil {
			return nil, fmt.Errorf("data table: %w", err)
		}
		// The backend's filter only saves transfer; the check is here.
		if k.Metric != metric || !s.layout.MatchConds(k, conds) {
			continue
		}
		sid, _ = s.layout.AppendSeriesIDFromRowKey(sid[:0], key)
		sr, ok := bySID[string(sid)]
		if !ok {
			sr = &seriesRef{sid: slices.Clone(sid), metric: metric}
			n := s.layout.TagCount(k)
			sr.tags = make([]rowkey.TagPair, n)
			for i := range n {
				sr.tags[i] = s.layout.TagAt(k, i)
			}
			bySID[string(sr.sid)] = sr
			out = append(out, sr)
		}
		if len(sr.hours) == 0 || sr.hours[len(sr.hours)-1] != k.BaseHour {
			sr.hours = append(sr.hours, k.BaseHour)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan data table: %w", err)
	}
	return out, nil
}

// labelSeries resolves the labels of the series (reverse lookups batched per
// kind, each distinct UID once), drops those the post matchers reject, and
// sets their label sets.
func (s *Store) labelSeries(ctx context.Context, p *plan, series []*seriesRef) ([]*seriesRef, error) {
	metricNames := make(map[uint64]string, len(p.metrics))
	for _, m := range p.metrics {
		metricNames[m.uid] = m.name
	}
	var ks, vs []uint64
	seenK, seenV := map[uint64]int{}, map[uint64]int{}
	for _, sr := range series {
		for _, t := range sr.tags {
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
		if !p.accept(sr, vNames, seenV) {
			continue
		}
		sb.Reset()
		if name := metricNames[sr.metric]; name != "" {
			sb.Add(model.MetricNameLabel, name)
		}
		for _, t := range sr.tags {
			sb.Add(kNames[seenK[t.K]], vNames[seenV[t.V]])
		}
		sb.Sort()
		sr.lset = sb.Labels()
		out = append(out, sr)
	}
	clear(series[len(out):])
	return out, nil
}

// accept checks the post matchers on a series, each distinct value once per
// query.
func (p *plan) accept(sr *seriesRef, vNames []string, vIdx map[uint64]int) bool {
	for _, pm := range p.post {
		i, ok := slices.BinarySearchFunc(sr.tags, pm.k, func(t rowkey.TagPair, k uint64) int {
			switch {
			case t.K < k:
				return -1
			case t.K > k:
				return 1
			}
			return 0
		})
		if !ok {
			if !pm.matchesEmpty {
				return false
			}
			continue
		}
		v := sr.tags[i].V
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

// seriesSet runs phase two: it reads the rows of the series in label order,
// at most ReadBatchSeries series and ReadBatchRows rows per multi-get, so a
// read holds one batch in memory whatever its size, plus the next one, whose
// multi-get runs while the caller consumes the current one.
type seriesSet struct {
	ctx    context.Context
	cancel context.CancelFunc
	s      *Store
	q      Query
	series []*seriesRef

	next     int // the series the next planned batch starts with
	nextHour int // and the index of its first hour not yet planned

	inflight *rowBatch // the multi-get under way, if any
	spare    *rowBatch // a finished batch whose buffers are reused

	ready    []readySeries // series completed by the last batch
	readyIdx int
	arena    []Sample // samples of the last batch's series
	carryLo  int      // samples of a series continued in the next batch

	cur Series
	err error
}

type readySeries struct {
	idx    int
	lo, hi int
}

// rowBatch is one multi-get: its keys, whom they belong to, and the answer.
type rowBatch struct {
	keys   [][]byte
	keyBuf []byte
	owners []int // index in series, per key
	hours  []uint32
	// cut is set when the batch ends inside a series, which the next batch
	// continues.
	cut  bool
	done chan struct{}
	rows []table.Row
	err  error
}

func (ss *seriesSet) Next() bool {
	for ss.err == nil {
		if ss.readyIdx < len(ss.ready) {
			r := ss.ready[ss.readyIdx]
			ss.readyIdx++
			if r.lo == r.hi && !ss.q.SeriesOnly {
				continue // no sample in range
			}
			ss.cur = Series{Labels: ss.series[r.idx].lset, Samples: ss.arena[r.lo:r.hi:r.hi]}
			return true
		}
		if ss.q.SeriesOnly {
			if ss.next >= len(ss.series) {
				return false
			}
			ss.ready = ss.ready[:0]
			for ; ss.next < len(ss.series); ss.next++ {
				ss.ready = append(ss.ready, readySeries{idx: ss.next})
			}
			ss.readyIdx = 0
			continue
		}
		if ss.inflight == nil && ss.next >= len(ss.series) {
			return false
		}
		if err := ss.fetch(); err != nil {
			ss.err = err
		}
	}
	return false
}

// plan cuts the next batch of row keys and starts its multi-get.
func (ss *seriesSet) plan() {
	b := ss.spare
	ss.spare = nil
	if b == nil {
		b = &rowBatch{}
	}
	b.keys, b.keyBuf, b.owners, b.hours = b.keys[:0], b.keyBuf[:0], b.owners[:0], b.hours[:0]
	b.rows, b.err, b.cut = nil, nil, false
	lay := ss.s.layout
	nSeries := 0
	for ss.next < len(ss.series) && len(b.owners) < ss.s.cfg.ReadBatchRows && nSeries < ss.s.cfg.ReadBatchSeries {
		sr := ss.series[ss.next]
		for ss.nextHour < len(sr.hours) && len(b.owners) < ss.s.cfg.ReadBatchRows {
			b.keyBuf = lay.AppendRowKey(b.keyBuf, sr.sid, sr.hours[ss.nextHour])
			b.owners = append(b.owners, ss.next)
			b.hours = append(b.hours, sr.hours[ss.nextHour])
			ss.nextHour++
		}
		if ss.nextHour < len(sr.hours) {
			b.cut = true // the row budget cut this series
			break
		}
		ss.next++
		ss.nextHour = 0
		nSeries++
	}
	// Keys are cut from keyBuf only now that it no longer grows.
	off := 0
	for _, o := range b.owners {
		n := lay.HeaderWidth() + len(ss.series[o].sid) - lay.MetricWidth
		b.keys = append(b.keys, b.keyBuf[off:off+n:off+n])
		off += n
	}
	b.done = make(chan struct{})
	ss.inflight = b
	go func() {
		defer close(b.done)
		b.rows, b.err = ss.s.data.Get(ss.ctx, FamilyData, b.keys)
	}()
}

// fetch waits for the multi-get under way, starts the next one and decodes
// the rows into the arena.
func (ss *seriesSet) fetch() error {
	if ss.inflight == nil {
		ss.plan()
	}
	b := ss.inflight
	select {
	case <-b.done:
	case <-ss.ctx.Done():
		return ss.ctx.Err()
	}
	ss.inflight = nil
	if b.err != nil {
		return fmt.Errorf("read %d rows: %w", len(b.keys), b.err)
	}
	if ss.next < len(ss.series) {
		ss.plan()
	}
	// A series cut by the previous batch keeps its samples at the arena's
	// start.
	ss.arena = ss.arena[:copy(ss.arena, ss.arena[ss.carryLo:])]
	ss.carryLo = 0
	ss.ready, ss.readyIdx = ss.ready[:0], 0
	lo := 0
	for i, row := range b.rows {
		var err error
		ss.arena, err = cellcodec.AppendRowSamples(ss.arena, rowkey.HourMillis(b.hours[i]), row.Cells, ss.q.Start, ss.q.End)
		if err != nil {
			return fmt.Errorf("row of series %s at hour %d: %w", ss.series[b.owners[i]].lset, b.hours[i], err)
		}
		if i < len(b.rows)-1 && b.owners[i+1] == b.owners[i] {
			continue
		}
		if i == len(b.rows)-1 && b.cut {
			break // continued in the next batch
		}
		ss.ready = append(ss.ready, readySeries{idx: b.owners[i], lo: lo, hi: len(ss.arena)})
		lo = len(ss.arena)
	}
	ss.carryLo = lo
	b.rows = nil
	ss.spare = b
	return nil
}

func (ss *seriesSet) At() Series { return ss.cur }
func (ss *seriesSet) Err() error { return ss.err }

// Close stops a multi-get under way and waits for it.
func (ss *seriesSet) Close() {
	ss.cancel()
	if ss.inflight != nil {
		<-ss.inflight.done
		ss.inflight = nil
	}
	ss.series, ss.arena, ss.ready, ss.spare = nil, nil, nil, nil
	ss.next, ss.readyIdx = 0, 0
}

type errSeriesSet struct{ err error }

func (e *errSeriesSet) Next() bool { return false }
func (e *errSeriesSet) At() Series { return Series{} }
func (e *errSeriesSet) Err() error { return e.err }
func (e *errSeriesSet) Close()     {}
