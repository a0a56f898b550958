package store

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// FuzzWriteRead writes one series with arbitrary label bytes and one sample:
// the store must either refuse it as invalid input, writing nothing, or give
// it back exactly (labels with empty values dropped, the value bit-exact).
func FuzzWriteRead(f *testing.F) {
	f.Add("up", "job", "node", int64(1_700_000_000_000), uint64(0x7ff0000000000002))
	f.Add("", "a", "", int64(0), uint64(0))
	f.Add("ö", "\xff", "x", int64(-1), uint64(1))
	f.Add("m", "__name__", "dup", int64(3_600_000), uint64(0x7ff8000000000001))
	db, _ := openPebble(f)
	s := openStore(f, db, Config{MaxLabelValueLength: 64})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, metric, name, value string, ts int64, bits uint64) {
		in := lbls(name, value)
		if metric != "" || name == "__name__" {
			in = lbls("__name__", metric, name, value)
		}
		m := mustMatcher(t, labels.MatchEqual, name, value)
		if name == "__name__" || name == "" {
			m = mustMatcher(t, labels.MatchRegexp, "__name__", ".*")
		}
		q := Query{Start: ts, End: ts, Matchers: []*labels.Matcher{m}}
		before := collect(t, s.Select(ctx, q))
		err := s.Write(ctx, []SeriesIn{{Labels: in, Samples: []Sample{{T: ts, V: math.Float64frombits(bits)}}}})
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("write %q: %v", in, err)
			}
			if after := collect(t, s.Select(ctx, q)); after != before {
				t.Fatalf("refused write %q changed the store:\n%s\n->\n%s", in, before, after)
			}
			return
		}
		want := withoutEmpty(in)
		ss := s.Select(ctx, q)
		defer ss.Close()
		found := false
		for ss.Next() {
			sr := ss.At()
			if labels.Equal(sr.Labels, want) {
				found = true
				if len(sr.Samples) != 1 || sr.Samples[0].T != ts || math.Float64bits(sr.Samples[0].V) != bits {
					t.Fatalf("series %s: samples %v, want one at %d with bits %x", want, sr.Samples, ts, bits)
				}
			}
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		if !found {
			t.Fatalf("written series %s not read back", want)
		}
	})
}
