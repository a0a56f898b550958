package importer

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/store"
)

// Reasons for dropping what the store cannot hold, beside seriesrules'.
const (
	// ReasonTimeRange: samples before 1970 or after 2106, which row keys
	// (u32 seconds) cannot hold.
	ReasonTimeRange = "timestamp_out_of_range"
	// ReasonUIDExhausted: series needing a new UID of a kind whose UID
	// width is used up (store.RefusedError).
	ReasonUIDExhausted = "uid_exhausted"
	// ReasonRefused: a series the store refused as invalid input although
	// the importer's own checks passed it.
	ReasonRefused = "refused_by_store"
)

// check applies the store's rules to a piece before it is batched, so that
// one bad series is dropped (and counted) instead of failing its batch: a
// series whose labels break seriesrules goes whole; samples outside the
// time the store can hold go, the rest stays. ok is false when nothing of
// the piece remains.
func check(in store.SeriesIn, lim seriesrules.Limits, d *drops) (out store.SeriesIn, ok bool) {
	n := len(in.Samples) + len(in.Histograms)
	if n == 0 {
		return in, false
	}
	if v := seriesrules.CheckLabels(in.Labels, lim); v != nil {
		d.add(v.Reason, 1, n, fmt.Sprintf("series %s: %s", seriesString(in), v.Rule))
		return in, false
	}
	fs, hs := in.Samples, in.Histograms
	// Samples come sorted: the ones the store can hold are one run.
	fl := sort.Search(len(fs), func(i int) bool { return fs[i].T >= 0 })
	fh := sort.Search(len(fs), func(i int) bool { return !storable(fs[i].T) && fs[i].T >= 0 })
	hl := sort.Search(len(hs), func(i int) bool { return hs[i].T >= 0 })
	hh := sort.Search(len(hs), func(i int) bool { return !storable(hs[i].T) && hs[i].T >= 0 })
	in.Samples, in.Histograms = fs[fl:fh], hs[hl:hh]
	if cut := n - (fh - fl) - (hh - hl); cut > 0 {
		d.add(ReasonTimeRange, 0, cut, fmt.Sprintf("series %s: %d samples before 1970 or after 2106", seriesString(in), cut))
	}
	return in, len(in.Samples)+len(in.Histograms) > 0
}

func storable(t int64) bool {
	_, _, err := rowkey.BaseHour(t)
	return err == nil
}

// seriesString formats a piece's labels for messages.
func seriesString(in store.SeriesIn) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range in.Labels {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return b.String()
}

// drops counts what was not imported, by reason, with the first example of
// each.
type drops struct {
	mu sync.Mutex
	m  map[string]*Dropped
}

// Dropped is what was dropped for one reason.
type Dropped struct {
	Reason  string
	Series  int64 // series (pieces) dropped whole
	Samples int64 // samples and histograms dropped, theirs included
	Example string
}

func (d *drops) add(reason string, series, samples int, example string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]*Dropped{}
	}
	e, ok := d.m[reason]
	if !ok {
		e = &Dropped{Reason: reason, Example: example}
		d.m[reason] = e
	}
	e.Series += int64(series)
	e.Samples += int64(samples)
}

// list returns the reasons, sorted.
func (d *drops) list() []Dropped {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Dropped, 0, len(d.m))
	for _, e := range d.m {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Reason < out[j].Reason })
	return out
}
