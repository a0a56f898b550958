package store

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/table"
)

const planHour = int64(1_700_000_000) / 3600 * 3600 * 1000

func planRaw(s Sample) table.Cell {
	return table.Cell{
		Row: []byte("k"), Family: FamilyData, Timestamp: s.T,
		Qualifier: cellcodec.AppendRawQualifier(nil, uint32(s.T-planHour)),
		Value:     cellcodec.AppendRawValue(nil, s.V),
	}
}

func planChunk(t testing.TB, samples []Sample) table.Cell {
	v, err := cellcodec.AppendChunkValue(nil, samples)
	return planCell(t, chunkenc.EncXOR, samples[0].T, samples[len(samples)-1].T, v, err)
}

// planPacked is the packed cell of parts, each a chunk (cellcodec/packed.go).
func planPacked(t testing.TB, parts ...[]Sample) table.Cell {
	var chunks []cellcodec.Chunk
	for _, p := range parts {
		c := planChunk(t, p)
		chunks = append(chunks, cellcodec.Chunk{Encoding: chunkenc.EncXOR, MinT: p[0].T, MaxT: p[len(p)-1].T, Data: c.Value})
	}
	v, err := cellcodec.AppendPackedValue(nil, planHour, chunks)
	return planCell(t, cellcodec.EncPackedXOR, chunks[0].MinT, chunks[len(chunks)-1].MaxT, v, err)
}

// planDense is the dense cell of samples (cellcodec/dense.go).
func planDense(t testing.TB, samples []Sample) table.Cell {
	v, err := cellcodec.AppendDenseValue(nil, planHour, samples)
	return planCell(t, cellcodec.EncDenseFloat, samples[0].T, samples[len(samples)-1].T, v, err)
}

// planCell is the chunk cell of encoding enc whose first and last samples
// are at mint and maxt, its value v as encoded (err from the encoder).
func planCell(t testing.TB, enc chunkenc.Encoding, mint, maxt int64, v []byte, err error) table.Cell {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return table.Cell{
		Row: []byte("k"), Family: FamilyData, Timestamp: maxt,
		Qualifier: cellcodec.AppendChunkQualifier(nil, enc, uint32(mint-planHour), uint32(maxt-planHour)), Value: v,
	}
}

func every15s(from, n int) []Sample {
	var out []Sample
	for i := from; i < from+n; i++ {
		out = append(out, Sample{T: planHour + int64(i)*15000, V: float64(i)})
	}
	return out
}

// rowAfter applies a plan to the cells of one row as a backend would and
// returns the row's cells afterwards, in qualifier order.
func rowAfter(cells []table.Cell, p *compactPlan) []table.Cell {
	type version struct {
		q string
		t int64
	}
	gone := make(map[version]bool, len(p.delChunks)+len(p.delRaw))
	for _, d := range slices.Concat(p.delChunks, p.delRaw) {
		gone[version{string(d.Qualifier), d.Timestamp}] = true
	}
	replaced := make(map[string]bool, len(p.puts))
	for _, d := range p.puts {
		replaced[string(d.Qualifier)] = true
	}
	var out []table.Cell
	for _, c := range cells {
		if !gone[version{string(c.Qualifier), c.Timestamp}] && !replaced[string(c.Qualifier)] {
			out = append(out, c)
		}
	}
	out = append(out, p.puts...)
	slices.SortFunc(out, func(a, b table.Cell) int { return bytes.Compare(a.Qualifier, b.Qualifier) })
	return out
}

func rowSamples(t testing.TB, cells []table.Cell) []Sample {
	t.Helper()
	s, err := cellcodec.AppendRowSamples(nil, planHour, tableCells(cells), math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sameBits(a, b []Sample) bool {
	return slices.EqualFunc(a, b, func(x, y Sample) bool {
		return x.T == y.T && math.Float64bits(x.V) == math.Float64bits(y.V)
	})
}

func TestCompactPlanRow(t *testing.T) {
	stale := math.Float64frombits(0x7ff0000000000002)
	negZero := math.Copysign(0, -1)
	raw240 := every15s(0, 240)
	raw240[7].V, raw240[8].V, raw240[9].V = stale, negZero, math.Float64frombits(0x7ff8000000000123)
	var rawCells []table.Cell
	for _, s := range raw240 {
		rawCells = append(rawCells, planRaw(s))
	}
	// An hour of markers alone: each an exception of 9 bytes in a dense
	// cell, a bit or two in XOR chunks.
	var staleCells []table.Cell
	for _, s := range every15s(0, 240) {
		staleCells = append(staleCells, planRaw(Sample{T: s.T, V: stale}))
	}
	// An hour compacted into XOR chunks (one packed cell), by builds before
	// packed cells (a plain cell a chunk), and into a dense cell (integers:
	// a dense cell is far smaller than their XOR chunks).
	packed := []table.Cell{planPacked(t, every15s(0, 120), every15s(120, 120))}
	compacted := []table.Cell{planChunk(t, every15s(0, 120)), planChunk(t, every15s(120, 120))}
	dense := []table.Cell{planDense(t, every15s(0, 240))}
	for _, tc := range []struct {
		name                  string
		xorOnly               bool // the plan's FloatChunksXOR
		cells                 []table.Cell
		rows, puts, delChunks int
		delRaw                int
		enc                   chunkenc.Encoding // of the cells the plan puts
	}{
		{"raw hour", true, rawCells, 1, 1, 0, 240, cellcodec.EncPackedXOR},
		{"compacted hour", true, packed, 0, 0, 0, 0, 0},
		{"compacted hour, plain cells", true, compacted, 0, 0, 0, 0, 0},
		// A 241st sample within the run: a packed cell of three chunks
		// overwrites the cell of two (same bounds, same version); one past
		// the run's end has other bounds, and the old cell goes.
		{"late sample", true, append(slices.Clone(packed), planRaw(Sample{T: planHour + 130*15000 + 1, V: 5})), 1, 1, 0, 1, cellcodec.EncPackedXOR},
		{"late sample past the chunks", true, append(slices.Clone(packed), planRaw(Sample{T: planHour + 3599_000, V: 5})), 1, 1, 1, 1, cellcodec.EncPackedXOR},
		{"late sample beside plain cells", true, append(slices.Clone(compacted), planRaw(Sample{T: planHour + 130*15000 + 1, V: 5})), 1, 1, 2, 1, cellcodec.EncPackedXOR},
		// An overwrite: the same cut, so the new packed cell overwrites the
		// old one (same qualifier and version), which must not be deleted.
		{"late overwrite", true, append(slices.Clone(packed), planRaw(Sample{T: planHour + 15000, V: stale})), 1, 1, 0, 1, cellcodec.EncPackedXOR},
		{"late overwrite beside plain cells", true, append(slices.Clone(compacted), planRaw(Sample{T: planHour + 15000, V: stale})), 1, 1, 2, 1, cellcodec.EncPackedXOR},
		{"overlapping chunks", true, []table.Cell{planChunk(t, every15s(0, 100)), planChunk(t, every15s(0, 120)), compacted[1]}, 1, 1, 3, 0, cellcodec.EncPackedXOR},
		{"packed beside plain, interrupted", true, append(slices.Clone(compacted), packed...), 1, 1, 2, 0, cellcodec.EncPackedXOR},
		{"small hour", true, []table.Cell{planRaw(Sample{T: planHour, V: negZero})}, 1, 1, 0, 1, chunkenc.EncXOR},
		// Dense cells where they save enough; XOR where they do not.
		{"raw hour, dense", false, rawCells, 1, 1, 0, 240, cellcodec.EncDenseFloat},
		{"small hour, dense allowed", false, []table.Cell{planRaw(Sample{T: planHour, V: negZero})}, 1, 1, 0, 1, cellcodec.EncDenseFloat},
		{"hour of staleness markers, dense allowed", false, staleCells, 1, 1, 0, 240, cellcodec.EncPackedXOR},
		{"dense hour", false, dense, 0, 0, 0, 0, 0},
		// A late sample within the cell's bounds: the same qualifier and
		// version, an overwrite; past them, the old cell goes.
		{"late sample into a dense hour", false, append(slices.Clone(dense), planRaw(Sample{T: planHour + 130*15000 + 1, V: 5})), 1, 1, 0, 1, cellcodec.EncDenseFloat},
		// A row folded before holds a fence: the fold counts on from it,
		// conditional on it, and overwrites it rather than deleting it.
		{"late sample into a fenced dense hour", false, append(slices.Clone(dense), planRaw(Sample{T: planHour + 130*15000 + 1, V: 5}),
			table.Cell{Row: []byte("k"), Family: FamilyFence, Qualifier: fenceQualifier, Timestamp: planHour + cellcodec.HourMillis - 1, Value: []byte{0x85, 0x01}}),
			1, 1, 0, 1, cellcodec.EncDenseFloat},
		{"late sample past a dense cell", false, append(slices.Clone(dense), planRaw(Sample{T: planHour + 3599_000, V: 5})), 1, 1, 1, 1, cellcodec.EncDenseFloat},
		{"late overwrite of a dense hour", false, append(slices.Clone(dense), planRaw(Sample{T: planHour + 15000, V: stale})), 1, 1, 0, 1, cellcodec.EncDenseFloat},
		// Adapters of either setting on one table: each folds the other's
		// cells into its own kind.
		{"packed hour with a late sample, dense allowed", false, append(slices.Clone(packed), planRaw(Sample{T: planHour + 130*15000 + 1, V: 5})), 1, 1, 1, 1, cellcodec.EncDenseFloat},
		{"dense hour with a late sample, XOR only", true, append(slices.Clone(dense), planRaw(Sample{T: planHour + 130*15000 + 1, V: 5})), 1, 1, 1, 1, cellcodec.EncPackedXOR},
		{"dense beside packed, interrupted", false, append(slices.Clone(packed), dense...), 1, 1, 1, 0, cellcodec.EncDenseFloat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compactPlan{xorOnly: tc.xorOnly}
			if err := p.addRow([]byte("k"), planHour, tc.cells); err != nil {
				t.Fatal(err)
			}
			puts := chunkPuts(t, &p)
			if c := findCell(tc.cells, FamilyFence, fenceQualifier); c != nil && (len(p.fences) != 1 || !bytes.Equal(p.fences[0].expected, c.Value)) {
				t.Fatalf("row with fence %x planned fences %+v, want one conditional on it", c.Value, p.fences)
			}
			if p.rows != tc.rows || len(puts) != tc.puts || len(p.delChunks) != tc.delChunks || len(p.delRaw) != tc.delRaw {
				t.Fatalf("rows %d puts %d delChunks %d delRaw %d; want %d %d %d %d", p.rows, len(puts), len(p.delChunks), len(p.delRaw), tc.rows, tc.puts, tc.delChunks, tc.delRaw)
			}
			for _, c := range puts {
				if enc := chunkenc.Encoding(c.Qualifier[1]); enc != tc.enc {
					t.Fatalf("put cell %x of encoding %#x, want %#x", c.Qualifier, byte(enc), byte(tc.enc))
				}
			}
			before := rowSamples(t, tc.cells)
			after := rowAfter(tc.cells, &p)
			if got := rowSamples(t, after); !sameBits(got, before) {
				t.Fatalf("row reads %v after compaction, %v before", got, before)
			}
			if tc.rows == 0 {
				return
			}
			for _, c := range after {
				if !cellcodec.IsChunkQualifier(c.Qualifier) {
					t.Fatalf("raw cell %x left", c.Qualifier)
				}
				if c.Family == FamilyFence {
					continue
				}
				chs, err := cellcodec.AppendCellChunks(nil, planHour, c.Qualifier, c.Value)
				if err != nil || c.Timestamp != chs[len(chs)-1].MaxT {
					t.Fatalf("chunk cell %x: %+v, %v", c.Qualifier, chs, err)
				}
				for _, ch := range chs {
					if ch.Encoding == chunkenc.EncXOR && ch.NumSamples() > cellcodec.SamplesPerChunk {
						t.Fatalf("chunk cell %x: chunk of %d samples", c.Qualifier, ch.NumSamples())
					}
				}
			}
			// Compacting again changes nothing: idempotent.
			again := compactPlan{xorOnly: tc.xorOnly}
			if err := again.addRow([]byte("k"), planHour, after); err != nil || again.rows != 0 {
				t.Fatalf("second compaction plans %d rows, %v", again.rows, err)
			}
		})
	}
}

func TestCompactPlanMalformed(t *testing.T) {
	var p compactPlan
	cells := []table.Cell{planRaw(Sample{T: planHour + 1, V: 1}), {Row: []byte("k"), Qualifier: []byte{0, 0, 1}, Value: []byte{1}}}
	if err := p.addRow([]byte("k"), planHour, cells); !errors.Is(err, cellcodec.ErrMalformedCell) {
		t.Fatalf("error %v", err)
	}
	bad := []table.Cell{{Row: []byte("k"), Qualifier: []byte{1, 1}, Value: []byte{0, 0}}}
	if err := p.addRow([]byte("k"), planHour, bad); !errors.Is(err, cellcodec.ErrMalformedCell) {
		t.Fatalf("error %v", err)
	}
	if p.rows != 0 || len(p.puts)+len(p.delRaw)+len(p.delChunks) != 0 {
		t.Fatalf("malformed rows planned: %+v", p)
	}
}

func BenchmarkCompactPlanRow(b *testing.B) {
	var cells []table.Cell
	for _, s := range every15s(0, 240) {
		cells = append(cells, planRaw(s))
	}
	var p compactPlan
	b.ReportAllocs()
	for b.Loop() {
		p.reset()
		if err := p.addRow([]byte("k"), planHour, cells); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/240, "ns/sample")
}

// TestCompactPlanCellLimit: a run whose XOR chunks exceed the cell limit
// goes into several cells, each within it, in time order and together the
// run bit for bit; a dense cell over the limit is not written, even where
// it would be the smaller; a second pass leaves the cells alone; and the
// limit that a real HBase enforces (10 MiB) is far above the default.
func TestCompactPlanCellLimit(t *testing.T) {
	if MaxChunkCellBytes > 10<<20-1<<10 {
		t.Fatalf("MaxChunkCellBytes %d: a cell that size would be refused by HBase's default hbase.server.keyvalue.maxsize", MaxChunkCellBytes)
	}
	// One sample every 50 ms for 20 minutes, values of random bits: about
	// 9 bytes a sample in XOR chunks, 200 chunks.
	const n = 24_000
	rng := rand.New(rand.NewPCG(1, 2))
	samples := make([]Sample, n)
	var cells []table.Cell
	for i := range samples {
		samples[i] = Sample{T: planHour + int64(i)*50, V: math.Float64frombits(rng.Uint64() &^ (0x7ff << 52))}
		cells = append(cells, planRaw(samples[i]))
	}
	for _, tc := range []struct {
		name  string
		limit int
		cells int // at least
	}{
		{"limit 16 KiB", 16 << 10, 13},
		{"limit 100 KiB", 100 << 10, 3},
		{"default limit", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &compactPlan{maxCellBytes: tc.limit}
			if err := p.addRow([]byte("k"), planHour, cells); err != nil {
				t.Fatal(err)
			}
			limit := p.cellLimit()
			puts := chunkPuts(t, p)
			if len(puts) < tc.cells {
				t.Fatalf("%d cells, want at least %d", len(puts), tc.cells)
			}
			last := int64(math.MinInt64)
			for i, c := range puts {
				if len(c.Value) > limit {
					t.Errorf("cell %d holds %d bytes, more than the limit %d", i, len(c.Value), limit)
				}
				if enc := chunkenc.Encoding(c.Qualifier[1]); enc != chunkenc.EncXOR && enc != cellcodec.EncPackedXOR {
					t.Errorf("cell %d of encoding %s, want XOR chunks (random bits gain nothing dense)", i, enc)
				}
				got := rowSamples(t, []table.Cell{c})
				if got[0].T <= last {
					t.Errorf("cell %d starts at %d, not after the cell before it (%d)", i, got[0].T, last)
				}
				last = got[len(got)-1].T
			}
			after := rowAfter(cells, p)
			if got := rowSamples(t, after); !sameBits(got, samples) {
				t.Fatalf("the row reads %d samples after the plan, not the %d written", len(got), len(samples))
			}
			again := &compactPlan{maxCellBytes: tc.limit}
			if err := again.addRow([]byte("k"), planHour, after); err != nil {
				t.Fatal(err)
			}
			if again.rows != 0 {
				t.Errorf("a second pass plans %d cells over a compacted row", len(again.puts))
			}
		})
	}

	// A counter every 50 ms: a dense cell would be the smaller by far, but
	// one over the limit must not be written.
	ints := make([]Sample, n)
	sum := 0
	cells = cells[:0]
	for i := range ints {
		sum += rng.IntN(1000)
		ints[i] = Sample{T: planHour + int64(i)*50, V: float64(sum)}
		cells = append(cells, planRaw(ints[i]))
	}
	dense, err := cellcodec.AppendDenseValue(nil, planHour, ints)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{len(dense), len(dense) - 1} {
		p := &compactPlan{maxCellBytes: limit}
		if err := p.addRow([]byte("k"), planHour, cells); err != nil {
			t.Fatal(err)
		}
		puts := chunkPuts(t, p)
		isDense := len(puts) == 1 && chunkenc.Encoding(puts[0].Qualifier[1]) == cellcodec.EncDenseFloat
		if want := limit >= len(dense); isDense != want {
			t.Errorf("limit %d, dense cell of %d bytes: planned dense %v, want %v", limit, len(dense), isDense, want)
		}
		if got := rowSamples(t, rowAfter(cells, p)); !sameBits(got, ints) {
			t.Errorf("limit %d: the row reads %d samples after the plan, not the %d written", limit, len(got), len(ints))
		}
	}
}

// TestHistogramCellsWithinBound: the largest histogram the series rules let
// through (seriesrules.MaxHistogramBuckets buckets, each in a span of its
// own, counts of random size) takes at most MaxChunkCellBytes as a raw
// cell, and so does every histogram chunk cell the compactor cuts from a
// run of them: HBase would refuse a cell over 10 MiB, pass after pass.
func TestHistogramCellsWithinBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 12
	var cells []table.Cell
	var want []HistogramSample
	counts := make([]int64, seriesrules.MaxHistogramBuckets)
	for i := range n {
		h := &histogram.Histogram{Schema: 0}
		prev := int64(0)
		for j := range counts {
			counts[j] += rng.Int64N(1 << 40) // a counter: no reset
			h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: 1, Length: 1})
			h.PositiveBuckets = append(h.PositiveBuckets, counts[j]-prev)
			prev = counts[j]
			h.Count += uint64(counts[j])
		}
		if v := seriesrules.CheckHistogram(h, nil); v != nil {
			t.Fatalf("the series rules refuse the test's histogram: %v", v)
		}
		hs := HistogramSample{T: planHour + int64(i)*15000, H: h}
		v := cellcodec.AppendHistogramValue(nil, h)
		if len(v) > MaxChunkCellBytes {
			t.Fatalf("a raw histogram cell of %d bytes, more than %d", len(v), MaxChunkCellBytes)
		}
		cells = append(cells, table.Cell{Row: []byte("k"), Family: FamilyRaw, Timestamp: hs.T,
			Qualifier: cellcodec.AppendRawQualifier(nil, uint32(hs.T-planHour)), Value: v})
		want = append(want, hs)
	}
	p := &compactPlan{}
	if err := p.addRow([]byte("k"), planHour, cells); err != nil {
		t.Fatal(err)
	}
	if len(p.puts) < 2 {
		t.Fatalf("%d chunk cells for %d histograms of %d buckets: the chunk bound did not cut", len(p.puts), n, seriesrules.MaxHistogramBuckets)
	}
	for i, c := range p.puts {
		if len(c.Value) > MaxChunkCellBytes {
			t.Errorf("chunk cell %d of %d bytes, more than %d", i, len(c.Value), MaxChunkCellBytes)
		}
	}
	got, err := cellcodec.AppendRowPoints(nil, planHour, tableCells(rowAfter(cells, p)), math.MinInt64, math.MaxInt64)
	if err != nil || len(got) != n {
		t.Fatalf("the row reads %d points after the plan (%v), want %d", len(got), err, n)
	}
	for i := range got {
		if !cellcodec.SameHistogramSample(got[i].Histogram(), want[i]) {
			t.Fatalf("histogram %d differs after the plan", i)
		}
	}
}

// chunkPuts checks that each row p plans ends its puts with the row's
// fence cell (FamilyFence, the hour's last millisecond, a new value, and
// the row's condition) and returns the other puts.
func chunkPuts(t *testing.T, p *compactPlan) []table.Cell {
	t.Helper()
	var out []table.Cell
	for _, f := range p.fences {
		fence := p.puts[f.to-1]
		if fence.Family != FamilyFence || !cellcodec.IsFenceQualifier(fence.Qualifier) ||
			fence.Timestamp != planHour+cellcodec.HourMillis-1 || !bytes.Equal(f.wrote, fence.Value) {
			t.Fatalf("row's last put %+v, fence %+v: want the row's fence cell, its condition", fence, f)
		}
		if want, err := cellcodec.AppendNextFence(nil, f.expected); err != nil || !bytes.Equal(f.wrote, want) {
			t.Fatalf("row's fence held %x and is written %x, want %x (%v)", f.expected, f.wrote, want, err)
		}
		for _, c := range p.puts[f.from : f.to-1] {
			if c.Family == FamilyFence {
				t.Fatalf("row puts a second fence cell %+v", c)
			}
			out = append(out, c)
		}
	}
	if len(p.puts) != len(out)+len(p.fences) {
		t.Fatalf("%d puts, %d in rows' fences", len(p.puts), len(out)+len(p.fences))
	}
	return out
}
