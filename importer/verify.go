package importer

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/store"
)

// ErrVerify is the error of a run that found a unit whose data in the store
// differs from its source.
var ErrVerify = errors.New("imported data differs from the source")

// Counts are the series, float samples and histogram samples of a unit on
// one side of a verification.
type Counts struct {
	Series, Samples, Histograms int64
}

// Mismatch is a unit whose data in the store differs from its source: the
// store, read over the unit's range with the source's selection, has other
// series, or other sample counts in some series.
type Mismatch struct {
	Unit          string
	Source, Store Counts
	// Differ is how many series the two sides do not agree on (missing on
	// one side, or with other counts); Examples names a few.
	Differ   int
	Examples []string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("unit %s: source %d series, %d samples, %d histograms; store %d series, %d samples, %d histograms; %d series differ: %s",
		m.Unit, m.Source.Series, m.Source.Samples, m.Source.Histograms,
		m.Store.Series, m.Store.Samples, m.Store.Histograms, m.Differ, strings.Join(m.Examples, "; "))
}

// maxExamples bounds the series a Mismatch names.
const maxExamples = 3

// namesPerSelect bounds the metric names of one store Select when a unit
// is selected by the names it holds.
const namesPerSelect = 500

// verify compares a unit's series and sample counts in the source with what
// the store returns over the unit's range. It holds, per series of the
// unit, a hash and two counts on each side: it never holds samples beyond
// one series.
func (r *run) verify(ctx context.Context, u Unit) (*Mismatch, error) {
	v := &verifier{seed: maphash.MakeSeed(), src: map[uint64]*Counts{}, seen: map[uint64]bool{}}
	names, err := v.readSource(ctx, r, u, nil)
	if err != nil {
		return nil, fmt.Errorf("read the source: %w", err)
	}
	m := &Mismatch{Unit: u.ID, Source: v.total}
	for _, ms := range r.selectors(names) {
		ss := r.cfg.Reader.Select(ctx, store.Query{Start: u.MinTime, End: u.MaxTime, Matchers: ms})
		for ss.Next() {
			v.compare(ss.At(), m)
		}
		err := ss.Err()
		ss.Close()
		if err != nil {
			return nil, fmt.Errorf("read the store: %w", err)
		}
	}
	if len(v.src) > 0 {
		// In the source, not in the store: a second pass names a few.
		m.Differ += len(v.src)
		if _, err := v.readSource(ctx, r, u, m); err != nil {
			return nil, fmt.Errorf("read the source again: %w", err)
		}
	}
	if m.Differ == 0 && m.Source == m.Store {
		return nil, nil
	}
	return m, nil
}

type verifier struct {
	seed  maphash.Seed
	src   map[uint64]*Counts // source series not yet met in the store
	seen  map[uint64]bool    // store series met (several selectors may list one)
	total Counts
}

// readSource counts the unit's series as the import writes them (the same
// checks applied) and returns their metric names. With missing set, it
// instead names the series still in v.src, into missing's examples.
func (v *verifier) readSource(ctx context.Context, r *run, u Unit, missing *Mismatch) ([]string, error) {
	it, err := r.cfg.Source.Open(ctx, u)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	names := map[string]bool{}
	var ignored drops
	for it.Next() {
		in, ok := check(it.At(), r.cfg.Limits, &ignored)
		if !ok {
			continue
		}
		h := v.hash(in.Labels)
		c := v.src[h]
		if missing != nil {
			if c != nil && len(missing.Examples) < maxExamples {
				missing.Examples = append(missing.Examples, fmt.Sprintf("%s: not in the store", seriesString(in)))
				delete(v.src, h)
			}
			continue
		}
		if c == nil {
			c = &Counts{}
			v.src[h] = c
			v.total.Series++
		}
		c.Samples += int64(len(in.Samples))
		c.Histograms += int64(len(in.Histograms))
		v.total.Samples += int64(len(in.Samples))
		v.total.Histograms += int64(len(in.Histograms))
		for _, l := range in.Labels {
			if l.Name == model.MetricNameLabel {
				names[l.Value] = true
			}
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// compare takes one series the store returned.
func (v *verifier) compare(s store.Series, m *Mismatch) {
	var ls []labels.Label
	s.Labels.Range(func(l labels.Label) { ls = append(ls, l) })
	h := v.hash(ls)
	if v.seen[h] {
		return
	}
	v.seen[h] = true
	got := Counts{Series: 1, Samples: int64(len(s.Samples)), Histograms: int64(len(s.Histograms))}
	m.Store.Series++
	m.Store.Samples += got.Samples
	m.Store.Histograms += got.Histograms
	want, ok := v.src[h]
	delete(v.src, h)
	switch {
	case !ok:
		m.note(fmt.Sprintf("%s: in the store only (%d samples, %d histograms)", s.Labels, got.Samples, got.Histograms))
	case want.Samples != got.Samples || want.Histograms != got.Histograms:
		m.note(fmt.Sprintf("%s: source %d samples, %d histograms; store %d, %d", s.Labels, want.Samples, want.Histograms, got.Samples, got.Histograms))
	}
}

func (m *Mismatch) note(example string) {
	m.Differ++
	if len(m.Examples) < maxExamples {
		m.Examples = append(m.Examples, example)
	}
}

// hash identifies a label set; empty values are left out, as the store
// drops them.
func (v *verifier) hash(ls []labels.Label) uint64 {
	var h maphash.Hash
	h.SetSeed(v.seed)
	for _, l := range ls {
		if l.Value == "" {
			continue
		}
		h.WriteString(l.Name)
		h.WriteByte(0xff)
		h.WriteString(l.Value)
		h.WriteByte(0xff)
	}
	return h.Sum64()
}

// selectors are the store queries that find a unit's series: the source's
// own matchers when it has a selection, else its metric names.
func (r *run) selectors(names []string) [][]*labels.Matcher {
	if sel, ok := r.cfg.Source.(Selector); ok {
		if ms := sel.Matchers(); len(ms) > 0 {
			return ms
		}
	}
	var out [][]*labels.Matcher
	for chunk := range slices.Chunk(names, namesPerSelect) {
		quoted := make([]string, len(chunk))
		for i, n := range chunk {
			quoted[i] = regexp.QuoteMeta(n)
		}
		out = append(out, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, strings.Join(quoted, "|"))})
	}
	return out
}
