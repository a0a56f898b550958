package cellcodec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

const testHour = int64(1_700_000_000) / 3600 * 3600 * 1000

// cell is a qualifier and value; testCells adapts a slice of them to Cells.
type cell struct{ q, v []byte }

type testCells []cell

func (c testCells) Len() int                    { return len(c) }
func (c testCells) Cell(i int) ([]byte, []byte) { return c[i].q, c[i].v }

func rawCell(hour int64, s Sample) cell {
	return cell{AppendRawQualifier(nil, uint32(s.T-hour)), AppendRawValue(nil, s.V)}
}

func chunkCell(tb testing.TB, hour int64, samples []Sample) cell {
	q, v := chunkOf(tb, hour, samples)
	return cell{q, v}
}

// sortCells puts cells in a backend's order: bytewise by qualifier.
func sortCells(cells []cell) {
	slices.SortStableFunc(cells, func(a, b cell) int { return bytes.Compare(a.q, b.q) })
}

// referenceMerge is the obvious evaluation of AppendRowSamples' contract for
// raw cells and disjoint chunks.
func referenceMerge(raw, chunk []Sample, mint, maxt int64) []Sample {
	byT := map[int64]float64{}
	for _, s := range chunk {
		byT[s.T] = s.V
	}
	for _, s := range raw {
		byT[s.T] = s.V // raw wins
	}
	var out []Sample
	for t, v := range byT {
		if t >= mint && t <= maxt {
			out = append(out, Sample{t, v})
		}
	}
	slices.SortFunc(out, compareT)
	return out
}

// randomHourSamples are samples at distinct random times within the hour.
func randomHourSamples(rng *rand.Rand, n int) []Sample {
	seen := map[int64]bool{}
	var out []Sample
	for range n {
		t := testHour + rng.Int64N(HourMillis)
		if rng.IntN(3) == 0 {
			t = testHour + rng.Int64N(40) // collide often
		}
		if seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, Sample{t, math.Float64frombits(rng.Uint64())})
	}
	slices.SortFunc(out, compareT)
	return out
}

func TestAppendRowSamplesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		raw := randomHourSamples(rng, rng.IntN(60))
		var chunk []Sample
		if rng.IntN(2) == 0 {
			chunk = randomHourSamples(rng, 1+rng.IntN(300))
		}
		var cells []cell
		for _, s := range raw {
			cells = append(cells, rawCell(testHour, s))
		}
		// The chunk samples cut as the compactor cuts them, packed into one
		// cell or, as older builds wrote them, a cell each.
		if len(chunk) > 0 {
			cells = append(cells, cutCells(t, testHour, chunk, rng.IntN(3) == 0)...)
		}
		if rng.IntN(4) == 0 {
			rng.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
		} else {
			sortCells(cells)
		}
		mint, maxt := int64(math.MinInt64), int64(math.MaxInt64)
		if rng.IntN(2) == 0 {
			mint = testHour + rng.Int64N(HourMillis) - 1000
			maxt = mint + rng.Int64N(HourMillis)
		}
		prefix := []Sample{{T: -1, V: 7}}
		got, err := AppendRowSamples(slices.Clone(prefix), testHour, testCells(cells), mint, maxt)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !sameSamples(got[:1], prefix) {
			t.Fatalf("case %d: prefix of dst changed", i)
		}
		if want := referenceMerge(raw, chunk, mint, maxt); !sameSamples(got[1:], want) {
			t.Fatalf("case %d: %d raw, %d chunk samples in [%d, %d]: got %v, want %v", i, len(raw), len(chunk), mint, maxt, got[1:], want)
		}
	}
}

func TestAppendRowSamplesRawWins(t *testing.T) {
	h := testHour
	neg0 := math.Copysign(0, -1)
	cells := testCells{
		rawCell(h, Sample{h + 10, 1}),
		rawCell(h, Sample{h + 20, math.Float64frombits(staleNaN)}),
		rawCell(h, Sample{h + 30, neg0}),
		chunkCell(t, h, []Sample{{h + 5, 100}, {h + 10, 200}, {h + 20, 300}, {h + 30, 400}, {h + 40, 0}}),
	}
	got, err := AppendRowSamples(nil, h, cells, math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{{h + 5, 100}, {h + 10, 1}, {h + 20, math.Float64frombits(staleNaN)}, {h + 30, neg0}, {h + 40, 0}}
	if !sameSamples(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	got, err = AppendRowSamples(got[:0], h, cells, h+10, h+20)
	if err != nil || !sameSamples(got, want[1:3]) {
		t.Errorf("trimmed to [h+10, h+20]: got %v, %v; want %v", got, err, want[1:3])
	}
	if got, _ := AppendRowSamples(nil, h, cells, h+21, h+29); len(got) != 0 {
		t.Errorf("empty range: got %v", got)
	}
}

// TestAppendRowSamplesOverlappingChunks: an interrupted compaction leaves
// the old and the new cut of an hour side by side; they agree, and the row
// reads as either would.
func TestAppendRowSamplesOverlappingChunks(t *testing.T) {
	h := testHour
	all := hourSamples(rand.New(rand.NewPCG(4, 4)), 240, h)
	cells := testCells{
		chunkCell(t, h, all[:100]), chunkCell(t, h, all[100:200]), // old cut, before late samples
		chunkCell(t, h, all[:120]), chunkCell(t, h, all[120:]), // new cut
	}
	sortCells(cells)
	got, err := AppendRowSamples(nil, h, cells, math.MinInt64, math.MaxInt64)
	if err != nil || !sameSamples(got, all) {
		t.Fatalf("got %d samples, %v; want %d", len(got), err, len(all))
	}
}

func TestAppendRowSamplesErrors(t *testing.T) {
	h := testHour
	good := rawCell(h, Sample{h + 1, 1})
	q, v := chunkOf(t, h, []Sample{{h + 5, 1}, {h + 6, 2}})
	for _, tc := range []struct {
		name string
		cell cell
	}{
		{"unknown qualifier", cell{[]byte{2, 0, 0, 0}, good.v}},
		{"key-only cell", cell{good.q, nil}},
		{"offset beyond hour", cell{AppendRawQualifier(nil, HourMillis), good.v}},
		{"bad chunk", cell{AppendChunkQualifier(nil, 0, 0, 0), []byte{0}}},
		{"old 2-byte chunk qualifier", cell{[]byte{1, 1}, v}},
		{"unknown chunk encoding", cell{AppendChunkQualifier(nil, 99, 0, 0), []byte{0, 0}}},
		{"chunk beyond its qualifier", cell{AppendChunkQualifier(nil, 1, 5, 5), v}},
		{"truncated chunk value", cell{q, v[:1]}},
	} {
		dst := []Sample{{1, 1}}
		got, err := AppendRowSamples(dst, h, testCells{good, tc.cell}, math.MinInt64, math.MaxInt64)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
		}
		if len(got) != 1 {
			t.Errorf("%s: dst has %d samples after an error, want it as given", tc.name, len(got))
		}
	}
}

func TestAppendRowSamplesAllocs(t *testing.T) {
	h := testHour
	var cells testCells
	for i := range 240 {
		cells = append(cells, rawCell(h, Sample{h + int64(i)*15000, float64(i)}))
	}
	dst := make([]Sample, 0, 256)
	if allocs := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = AppendRowSamples(dst[:0], h, cells, math.MinInt64, math.MaxInt64); err != nil || len(dst) != 240 {
			t.Fatal(len(dst), err)
		}
	}); allocs != 0 {
		t.Errorf("raw row: %v allocations", allocs)
	}
	// Out of order cells take the sorting path, which must not allocate either.
	cells[0], cells[239] = cells[239], cells[0]
	if allocs := testing.AllocsPerRun(100, func() {
		dst, _ = AppendRowSamples(dst[:0], h, cells, math.MinInt64, math.MaxInt64)
	}); allocs != 0 {
		t.Errorf("shuffled raw row: %v allocations", allocs)
	}
	chunks := compactedRow(t, h)
	if allocs := testing.AllocsPerRun(100, func() {
		dst, _ = AppendRowSamples(dst[:0], h, chunks, math.MinInt64, math.MaxInt64)
	}); allocs != 0 {
		t.Errorf("compacted row: %v allocations", allocs)
	}
}

// compactedRow is an hour of 15 s samples as the compactor leaves it.
func compactedRow(tb testing.TB, h int64) testCells {
	samples := make([]Sample, 240)
	for i := range samples {
		samples[i] = Sample{h + int64(i)*15000, float64(i % 17)}
	}
	return testCells{chunkCell(tb, h, samples[:120]), chunkCell(tb, h, samples[120:])}
}

func BenchmarkAppendRowSamplesRaw(b *testing.B) {
	h := testHour
	var cells testCells
	for i := range 240 {
		cells = append(cells, rawCell(h, Sample{h + int64(i)*15000, float64(i)}))
	}
	dst := make([]Sample, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = AppendRowSamples(dst[:0], h, cells, math.MinInt64, math.MaxInt64); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/240, "ns/sample")
}

func BenchmarkAppendRowSamplesChunk(b *testing.B) {
	h := testHour
	cells := compactedRow(b, h)
	dst := make([]Sample, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = AppendRowSamples(dst[:0], h, cells, math.MinInt64, math.MaxInt64); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/240, "ns/sample")
}
