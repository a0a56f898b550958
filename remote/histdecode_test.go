package remote

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"
)

// randomRawHistogram encodes a histogram message by hand, as any sender
// may: fields in random order, repeated fields packed or not and sometimes
// split in two, extreme values. Its values need not make a valid histogram:
// decoding, not validation, is under test.
func randomRawHistogram(rng *rand.Rand) []byte {
	isFloat := rng.IntN(2) == 0
	var fields [][]byte
	add := func(b []byte) { fields = append(fields, b) }
	randFloat := func() float64 {
		return []float64{0, -0.5, 1.25, math.Inf(1), math.NaN(), math.Float64frombits(0x7ff0000000000002), rng.NormFloat64() * 1e6}[rng.IntN(7)]
	}
	if isFloat {
		add(hField(nil, hCountFloat, randFloat()))
		if rng.IntN(2) == 0 {
			add(hField(nil, hZeroCountFloat, randFloat()))
		}
	} else {
		add(hField(nil, hCountInt, rng.Uint64()>>rng.IntN(64)))
		if rng.IntN(2) == 0 {
			add(hField(nil, hZeroCountInt, rng.Uint64N(1000)))
		}
	}
	add(hField(nil, hSum, randFloat()))
	if rng.IntN(4) == 0 {
		// A varint wider than a sint32: only its low 32 bits count.
		add(hField(nil, hSchema, rng.Uint64()))
	} else {
		add(hField(nil, hSchema, int64([]int32{-53, -4, 0, 3, 8, 9, 52, math.MaxInt32, math.MinInt32}[rng.IntN(9)])))
	}
	add(hField(nil, hZeroThreshold, randFloat()))
	add(hField(nil, hResetHint, uint64(rng.IntN(4))))
	add(hField(nil, hTimestamp, uint64(rng.Int64()>>rng.IntN(64)-rng.Int64N(1<<40))))
	for _, num := range []protowire.Number{hNegativeSpans, hPositiveSpans} {
		for range rng.IntN(4) {
			add(hField(nil, num, rawSpan(rng.Int64N(20)-10, rng.Uint64N(6))))
		}
	}
	buckets := []protowire.Number{hNegativeDeltas, hPositiveDeltas}
	if isFloat {
		buckets = []protowire.Number{hNegativeCounts, hPositiveCounts}
	}
	for _, num := range append(buckets, hCustomValues) {
		for _, part := range splitRandom(rng, rng.IntN(7)) {
			add(randomRepeated(rng, num, part))
		}
	}
	rng.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	var out []byte
	for _, f := range fields {
		out = append(out, f...)
	}
	return out
}

// splitRandom splits n elements into one or two parts.
func splitRandom(rng *rand.Rand, n int) []int {
	if n > 1 && rng.IntN(3) == 0 {
		k := 1 + rng.IntN(n-1)
		return []int{k, n - k}
	}
	if n == 0 {
		return nil
	}
	return []int{n}
}

// randomRepeated encodes n elements of a repeated scalar field, packed or
// one field each.
func randomRepeated(rng *rand.Rand, num protowire.Number, n int) []byte {
	isInt := num == hNegativeDeltas || num == hPositiveDeltas
	elem := func() any {
		if isInt {
			return rng.Int64N(1<<40) - 1<<39
		}
		return rng.NormFloat64() * 100
	}
	if rng.IntN(2) == 0 {
		var b []byte
		for range n {
			b = hField(b, num, elem())
		}
		return b
	}
	var packed []byte
	for range n {
		switch v := elem().(type) {
		case int64:
			packed = protowire.AppendVarint(packed, protowire.EncodeZigZag(v))
		case float64:
			packed = protowire.AppendFixed64(packed, math.Float64bits(v))
		}
	}
	return hField(nil, num, packed)
}

// TestDecodeHistogramsMatchGenerated decodes random hand-encoded requests
// with histograms, 1.0 and 2.0, and compares every histogram with what the
// generated (gogo) decoder makes of the same bytes. The scan's counts must
// match what decoding allocates (decodeMeasured).
func TestDecodeHistogramsMatchGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2))
	for i := range 300 {
		var v1, v2 []byte
		for _, s := range []string{"", "__name__", "m", "job", "j"} {
			v2 = hField(v2, 4, []byte(s))
		}
		for range 1 + rng.IntN(4) {
			ts1 := hField(nil, 1, hField(hField(nil, 1, []byte("__name__")), 2, []byte("m")))
			ts2 := hField(nil, 1, protowire.AppendVarint(protowire.AppendVarint(nil, 1), 2))
			for range rng.IntN(5) {
				h := randomRawHistogram(rng)
				ts1 = hField(ts1, 4, h)
				ts2 = hField(ts2, 3, h)
			}
			v1 = hField(v1, 1, ts1)
			v2 = hField(v2, 5, ts2)
		}
		r1, err := decodeMeasured(t, v1, false)
		if err != nil {
			t.Fatalf("request %d, 1.0: %v", i, err)
		}
		var g1 prompb.WriteRequest
		if err := g1.Unmarshal(v1); err != nil {
			t.Fatal(err)
		}
		r2, err := decodeMeasured(t, v2, true)
		if err != nil {
			t.Fatalf("request %d, 2.0: %v", i, err)
		}
		var g2 writev2.Request
		if err := g2.Unmarshal(v2); err != nil {
			t.Fatal(err)
		}
		if r1.badHistogram != nil || r2.badHistogram != nil {
			t.Fatalf("request %d: histogram refused: %v %v", i, r1.badHistogram, r2.badHistogram)
		}
		for j, s := range g1.Timeseries {
			compareWithGenerated(t, j, r1.series[j].Histograms, s.Histograms, func(k int) int64 { return s.Histograms[k].Timestamp })
		}
		for j, s := range g2.Timeseries {
			compareWithGenerated(t, j, r2.series[j].Histograms, s.Histograms, func(k int) int64 { return s.Histograms[k].Timestamp })
		}
	}
}
