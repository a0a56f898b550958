package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
)

// queryPlan is what a query's matchers become (DESIGN.md section 4, step 1).
type queryPlan struct {
	// groups are the metrics whose series are found, sorted and sent
	// together, in the order they go out: one group per metric name when
	// every matching series sorts by its metric name first, else one group.
	groups [][]metricRef
	// conds are the exact UID conditions, pushed into the scans.
	conds []rowkey.TagCond
	// post are the matchers checked per series after the scans, on tag
	// values resolved once per distinct UID.
	post []*postMatcher
	// raw are the (bucket, metric, hour)s whose rows are read with
	// FamilyRaw (rawhours.go), set once marks are read.
	raw rawHours
	// marks is the read of raw under way, until the first group's phase
	// one is done (earlyread.go).
	marks *marksRead
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

// tagLookup is where a tag matcher's strings sit in the lookup batch: its
// key at k (-1: not lookupable), its nv values from v0 (nv -1: any value).
type tagLookup struct{ k, v0, nv int }

// lookupable reports whether s can have a UID: the empty string has UID 0 by
// convention and NUL-prefixed strings are reserved, so neither is looked up.
func lookupable(s string) bool { return s != "" && s[0] != 0 }

// planQuery turns the matchers into a plan; a nil plan means no series can
// match, which is known without a scan. Every string is looked up in one
// round trip.
func (s *Store) planQuery(ctx context.Context, ms []*labels.Matcher) (*queryPlan, error) {
	var nameMs, tagMs []*labels.Matcher
	for _, m := range ms {
		if m.Name == model.MetricNameLabel {
			nameMs = append(nameMs, m)
		} else {
			tagMs = append(tagMs, m)
		}
	}
	var b labels2uid.Batch
	candidates, listAll := metricCandidates(nameMs)
	for _, name := range candidates {
		if lookupable(name) {
			b.Add(labels2uid.Metric, name)
		}
	}
	lookups := addTagLookups(&b, tagMs)
	if err := s.uids.Lookup(ctx, &b); err != nil {
		return nil, fmt.Errorf("look up the query's label UIDs: %w", err)
	}
	var (
		metrics []metricRef
		names   *nameSnapshot
	)
	if listAll {
		snap, err := s.readState().names.get(ctx)
		if err != nil {
			return nil, err
		}
		names, metrics = &snap, snap.metrics
	} else {
		metrics = foundMetrics(candidates, &b)
	}
	metrics = slices.DeleteFunc(slices.Clone(metrics), func(mr metricRef) bool {
		for _, m := range nameMs {
			if !m.Matches(mr.name) {
				return true
			}
		}
		return false
	})
	if len(metrics) == 0 {
		return nil, nil
	}
	p := &queryPlan{}
	if !p.addTagConds(tagMs, lookups, &b) {
		return nil, nil
	}
	var err error
	if p.groups, err = s.groupMetrics(ctx, metrics, names); err != nil {
		return nil, err
	}
	return p, nil
}

// metricCandidates returns the metric names an equality or a set regex on
// __name__ allows; listAll means any metric may match.
func metricCandidates(nameMs []*labels.Matcher) (candidates []string, listAll bool) {
	listAll = true
	for _, m := range nameMs {
		if m.Type == labels.MatchEqual {
			return []string{m.Value}, false
		}
		if sm := m.SetMatches(); listAll && m.Type == labels.MatchRegexp && len(sm) > 0 {
			candidates, listAll = sm, false
		}
	}
	return candidates, listAll
}

// foundMetrics returns the candidates that have a UID; the empty name is
// UID 0 without a lookup.
func foundMetrics(candidates []string, b *labels2uid.Batch) []metricRef {
	var out []metricRef
	for _, name := range candidates {
		if name == "" {
			out = append(out, metricRef{})
		}
	}
	for i, name := range b.Names[labels2uid.Metric] {
		if b.Found[labels2uid.Metric][i] {
			out = append(out, metricRef{b.UIDs[labels2uid.Metric][i], name})
		}
	}
	return out
}

// addTagLookups queues the tag keys of every tag matcher, and the values of
// equality and set matchers that cannot match an absent label.
func addTagLookups(b *labels2uid.Batch, tagMs []*labels.Matcher) []tagLookup {
	lookups := make([]tagLookup, len(tagMs))
	for i, m := range tagMs {
		lookups[i] = tagLookup{k: -1, v0: len(b.Names[labels2uid.TagV])}
		if lookupable(m.Name) {
			lookups[i].k = b.Add(labels2uid.TagK, m.Name)
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
				lookups[i].nv++
			}
		}
		if len(vals) == 0 {
			lookups[i].nv = -1
		}
	}
	return lookups
}

// addTagConds turns the looked-up tag matchers into exact conditions and
// post matchers; false means no series can match.
func (p *queryPlan) addTagConds(tagMs []*labels.Matcher, lookups []tagLookup, b *labels2uid.Batch) bool {
	for i, m := range tagMs {
		r := lookups[i]
		matchesEmpty := m.Matches("")
		if r.k < 0 || !b.Found[labels2uid.TagK][r.k] {
			// No series has this label.
			if !matchesEmpty {
				return false
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
					return false // none of the allowed values exists
				}
			}
			p.conds = append(p.conds, cond)
			if m.Type == labels.MatchEqual {
				continue // the condition is exact
			}
		}
		p.post = append(p.post, &postMatcher{m: m, k: k, matchesEmpty: matchesEmpty, byValue: map[uint64]bool{}})
	}
	return true
}

// groupMetrics cuts the metrics into the groups of the plan. Series sort by
// their labels, and __name__ sorts before every label name but a few
// (upper-case ones, and "__a"...): while no tag key of the UID table sorts
// before it, a series sorts by its metric name first, and series without a
// name (whose first label sorts after __name__) after all named ones. Then a
// query holds the distinct series of one metric at a time. Otherwise every
// series of the query is sorted at once. names is the name cache's snapshot
// when the caller has one.
func (s *Store) groupMetrics(ctx context.Context, metrics []metricRef, names *nameSnapshot) ([][]metricRef, error) {
	slices.SortFunc(metrics, func(a, b metricRef) int {
		// The empty name goes last.
		if (a.name == "") != (b.name == "") {
			if a.name == "" {
				return 1
			}
			return -1
		}
		return strings.Compare(a.name, b.name)
	})
	if metrics[0].name == metrics[len(metrics)-1].name {
		return [][]metricRef{metrics}, nil
	}
	if names == nil {
		snap, err := s.readState().names.get(ctx)
		if err != nil {
			return nil, err
		}
		names = &snap
	}
	if names.early {
		return [][]metricRef{metrics}, nil
	}
	var groups [][]metricRef
	for i := 0; i < len(metrics); {
		j := i + 1
		for j < len(metrics) && metrics[j].name == metrics[i].name {
			j++
		}
		groups = append(groups, metrics[i:j:j])
		i = j
	}
	return groups, nil
}
