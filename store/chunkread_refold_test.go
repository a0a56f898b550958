package store

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/cellcodec"
)

// TestSelectChunksRefoldOverlap: the state of a row between the two steps
// of a refold (DESIGN.md section 5: new chunk cells are put, the
// old ones and the raw cells are deleted later, at the bucket-hour's end).
// The hour held 120 samples (30 s scrapes), one plain XOR chunk A over the
// whole hour. A late sample lands in the first half, so the refold writes a
// packed cell of two chunks B1, B2. Until step (2), the row holds A, B1, B2
// and the raw cell. B2 overlaps A, but not its sorted neighbour B1: when
// rowDecoder.passable looked at the neighbours only, B2 went out untouched
// while A's samples in B2's range went out as loose samples too, so the
// streamed series repeated every sample of B2 and went back in time.
func TestSelectChunksRefoldOverlap(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{FloatChunks: FloatChunksXOR})
	ls := lbls("__name__", "ovl", "job", "a")
	base := int64(1_760_000_000_000) / hour * hour
	var smps []Sample
	for i := range 120 {
		smps = append(smps, Sample{T: base + int64(i)*30_000, V: float64(i)})
	}
	if err := s.Write(ctx, []SeriesIn{{Labels: ls, Samples: smps}}); err != nil {
		t.Fatal(err)
	}
	if stored := compactHour(t, s, ls, smps); len(stored) != 1 {
		t.Fatalf("the hour compacted into %d chunks, want 1", len(stored))
	}
	// A late sample at a new time in the first half of the hour: a raw cell
	// (and its mark).
	late := Sample{T: base + 15_000, V: -1}
	if err := s.Write(ctx, []SeriesIn{{Labels: ls, Samples: []Sample{late}}}); err != nil {
		t.Fatal(err)
	}
	// Step (1) of the refold: the new cells of the 121 samples, put beside
	// the old chunk and the raw cell, as the compactor does before step (2).
	merged := append([]Sample{smps[0], late}, smps[1:]...)
	key := seriesRowKey(t, s, ls, base)
	p := compactPlan{xorOnly: true}
	pts := make([]cellcodec.Point, len(merged))
	for i, smp := range merged {
		pts[i] = cellcodec.Point{T: smp.T, V: smp.V}
	}
	if err := p.addRuns(key, base, pts); err != nil {
		t.Fatal(err)
	}
	var n int
	for _, c := range p.puts {
		chunks, err := cellcodec.AppendCellChunks(nil, base, c.Qualifier, c.Value)
		if err != nil {
			t.Fatal(err)
		}
		n += len(chunks)
	}
	if n != 2 {
		t.Fatalf("the refold plans %d chunks, want 2", n)
	}
	if err := s.data.Put(ctx, p.puts); err != nil {
		t.Fatal(err)
	}
	q := Query{Start: base, End: base + hour - 1, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "job", "a")}}
	// The SAMPLES read is right.
	ss := s.Select(ctx, q)
	nSel := 0
	for ss.Next() {
		nSel += len(ss.At().Samples)
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	ss.Close()
	if nSel != 121 {
		t.Fatalf("Select returned %d samples, want 121", nSel)
	}
	// The streamed read: collectChunks fails on samples going back in time.
	got := collectChunks(t, s.SelectChunks(ctx, q))
	if len(got) != 1 || !slices.Equal(got[0].samples, merged) {
		t.Fatalf("the streamed read returned %+v; want one series of the 121 samples, once each", got)
	}
}
